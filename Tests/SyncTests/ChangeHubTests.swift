import Testing

@testable import Sync

/// What a worker knows of partitions' clocks (`ChangeHub.saw` / `moved`): only a hint for
/// skipping the idle check, so it must say "moved" when a pull saw the clock past the cursor
/// or a commit was notified since, and "not known" (the idle check runs) otherwise.
@Suite struct ChangeHubTests {
    @Test func unknownPartitionsRunTheIdleCheck() {
        let hub = ChangeHub(capacity: 1)
        #expect(!hub.moved("agency=Gabon", past: 0))
        hub.notify("agency=Gabon")
        #expect(!hub.moved("agency=Gabon", past: 5), "a notification alone says nothing about a cursor")
    }

    @Test func aClockSeenPastTheCursorMeansMoved() {
        let hub = ChangeHub(capacity: 1)
        hub.saw(["agency=Gabon": 10], since: hub.generation)
        #expect(hub.moved("agency=Gabon", past: 9))
        #expect(!hub.moved("agency=Gabon", past: 10))
        #expect(!hub.moved("agency=Gabon", past: 11))
        #expect(!hub.moved("agency=WildAid", past: 9))
    }

    @Test func aCommitNotifiedAfterTheClockWasSeenMeansMoved() {
        let hub = ChangeHub(capacity: 1)
        let before = hub.generation
        hub.saw("agency=Gabon", clock: 10, since: before)
        hub.notify("agency=WildAid")
        #expect(!hub.moved("agency=Gabon", past: 10), "another partition's commit")
        hub.notify("agency=Gabon")
        #expect(hub.moved("agency=Gabon", past: 10))
        // A pull begun after that notification saw the clock: known again, the idle check runs.
        hub.saw("agency=Gabon", clock: 10, since: hub.generation)
        #expect(!hub.moved("agency=Gabon", past: 10))
        // An older pull that saw less does not undo what a later one saw.
        hub.saw("agency=Gabon", clock: 12, since: hub.generation)
        hub.saw("agency=Gabon", clock: 11, since: before)
        #expect(hub.moved("agency=Gabon", past: 11))
    }

    @Test func aLaterObservationWinsEvenWhenLower() {
        // A restored database's clocks go back: the next pull's observation corrects the hint.
        let hub = ChangeHub(capacity: 1)
        hub.saw("agency=Gabon", clock: 50, since: hub.generation)
        hub.notify("agency=Other")
        hub.saw("agency=Gabon", clock: 20, since: hub.generation)
        #expect(!hub.moved("agency=Gabon", past: 20))
    }

    @Test func quietOnlyAtTheClockAndHorizonAnIdleCheckSawWhileListening() {
        let hub = ChangeHub(capacity: 1)
        hub.saw("agency=Gabon", clock: 10, horizon: 4, since: hub.generation)
        #expect(!hub.quiet("agency=Gabon", seq: 10, horizon: 4), "no listener yet")
        hub.setListening(true)
        #expect(!hub.quiet("agency=Gabon", seq: 10, horizon: 4), "seen before the listener connected")
        hub.saw("agency=Gabon", clock: 10, horizon: 4, since: hub.generation)
        #expect(hub.quiet("agency=Gabon", seq: 10, horizon: 4))
        #expect(!hub.quiet("agency=Gabon", seq: 9, horizon: 4), "a cursor behind the clock")
        #expect(!hub.quiet("agency=Gabon", seq: 11, horizon: 4), "a cursor past what is known")
        #expect(!hub.quiet("agency=Gabon", seq: 10, horizon: 3), "another horizon")
        hub.notify("agency=Gabon")
        #expect(!hub.quiet("agency=Gabon", seq: 10, horizon: 4), "a commit notified since")
    }

    @Test func aSnapshotSaysNothingOfTheHorizonButKeepsOneAnIdleCheckSaw() {
        let hub = ChangeHub(capacity: 1)
        hub.setListening(true)
        let seen = hub.generation
        hub.saw(["agency=Gabon": 10], since: seen)
        #expect(!hub.quiet("agency=Gabon", seq: 10, horizon: 0))
        hub.saw("agency=Gabon", clock: 10, horizon: 0, since: seen)
        hub.saw(["agency=Gabon": 10], since: seen)
        #expect(hub.quiet("agency=Gabon", seq: 10, horizon: 0))
    }

    @Test func losingTheListenerForgetsTheClocks() {
        let hub = ChangeHub(capacity: 1)
        hub.setListening(true)
        hub.saw("agency=Gabon", clock: 10, horizon: 0, since: hub.generation)
        hub.setListening(false)
        hub.setListening(true)
        #expect(!hub.quiet("agency=Gabon", seq: 10, horizon: 0))
        #expect(!hub.moved("agency=Gabon", past: 9), "forgotten")
    }
}
