import Foundation
import Testing

@testable import Sync

/// When a push writes its device's row (`DevicePushes`): a device's first push here, a new
/// app version, and once a minute; never a push that failed.
@Suite struct DevicePushesTests {
    static let login = [UInt8](repeating: 7, count: 32)
    static let device = DevicePushes.Key(digest: login, clientID: "tablet-1")
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aSecondPushWithinTheMinuteLeavesTheRow() {
        let pushes = DevicePushes()
        #expect(pushes.due(Self.device, appVersion: "7.1", now: Self.start))
        pushes.wrote(Self.device, appVersion: "7.1", at: Self.start)
        #expect(!pushes.due(Self.device, appVersion: "7.1", now: Self.start + 1))
        #expect(!pushes.due(Self.device, appVersion: "7.1", now: Self.start + 59.9))
        // No app version: the row keeps the one it has, nothing to write.
        #expect(!pushes.due(Self.device, appVersion: "", now: Self.start + 30))
        // After the minute, the row's last push moves again.
        #expect(pushes.due(Self.device, appVersion: "7.1", now: Self.start + 60))
        #expect(pushes.due(Self.device, appVersion: "", now: Self.start + 61))
    }

    @Test func aNewAppVersionIsWrittenAtOnce() {
        let pushes = DevicePushes()
        pushes.wrote(Self.device, appVersion: "7.1", at: Self.start)
        #expect(pushes.due(Self.device, appVersion: "7.2", now: Self.start + 1))
        pushes.wrote(Self.device, appVersion: "7.2", at: Self.start + 1)
        #expect(!pushes.due(Self.device, appVersion: "7.2", now: Self.start + 2))
        // A row written without a version remembers the one before it.
        pushes.wrote(Self.device, appVersion: "", at: Self.start + 3)
        #expect(!pushes.due(Self.device, appVersion: "7.2", now: Self.start + 4))
        // Written first without any version: the first version it is told is new.
        let other = DevicePushes.Key(digest: Self.login, clientID: "tablet-2")
        pushes.wrote(other, appVersion: "", at: Self.start)
        #expect(pushes.due(other, appVersion: "1.0", now: Self.start + 1))
    }

    @Test func eachDeviceAndLoginOnItsOwn() {
        let pushes = DevicePushes()
        pushes.wrote(Self.device, appVersion: "7.1", at: Self.start)
        #expect(pushes.due(DevicePushes.Key(digest: Self.login, clientID: "tablet-2"), appVersion: "7.1", now: Self.start + 1))
        var another = Self.login
        another[0] = 8
        #expect(pushes.due(DevicePushes.Key(digest: another, clientID: "tablet-1"), appVersion: "7.1", now: Self.start + 1))
    }

    @Test func aPushThatFailedOrAClockSetBackWritesAgain() {
        let pushes = DevicePushes()
        // Due but never written (the push failed): still due.
        #expect(pushes.due(Self.device, appVersion: "7.1", now: Self.start))
        #expect(pushes.due(Self.device, appVersion: "7.1", now: Self.start + 1))
        pushes.wrote(Self.device, appVersion: "7.1", at: Self.start)
        #expect(pushes.due(Self.device, appVersion: "7.1", now: Self.start - 1))
    }
}
