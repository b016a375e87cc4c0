import Testing

@testable import Backup

@Suite struct RestoreRolesTests {
    static let dumped = #"""
        SET default_transaction_read_only = off;
        CREATE ROLE postgres;
        ALTER ROLE postgres WITH SUPERUSER INHERIT CREATEROLE CREATEDB LOGIN REPLICATION BYPASSRLS;
        CREATE ROLE tideway_owner;
        ALTER ROLE tideway_owner WITH NOSUPERUSER INHERIT NOCREATEROLE NOCREATEDB NOLOGIN NOREPLICATION BYPASSRLS;
        CREATE ROLE "odd ""name""";
        ALTER ROLE "odd ""name""" WITH LOGIN;
        """#

    @Test func existingRolesAreToleratedAndTheRestoringRoleIsLeftAlone() {
        let script = RestoreRun.rolesScript(Self.dumped, runningAs: "postgres")
        let lines = script.split(separator: "\n").map(String.init)
        #expect(!lines.contains { $0.contains("ROLE postgres") })
        #expect(lines.contains("DO $tideway$ BEGIN CREATE ROLE tideway_owner; EXCEPTION WHEN duplicate_object THEN NULL; END $tideway$;"))
        #expect(lines.contains { $0.hasPrefix("ALTER ROLE tideway_owner WITH NOSUPERUSER") })
        #expect(lines.contains { $0.contains(##"CREATE ROLE "odd ""name"""; EXCEPTION"##) })
        #expect(lines.first == "SET default_transaction_read_only = off;")
    }

    @Test func aQuotedRestoringRoleIsRecognised() {
        let script = RestoreRun.rolesScript(Self.dumped, runningAs: #"odd "name""#)
        #expect(!script.contains("odd"))
        #expect(script.contains("ROLE postgres"))
    }

    @Test func theBlobDigestDependsOnEveryBlobAndItsSize() {
        let a = String(repeating: "a", count: 64), b = String(repeating: "b", count: 64)
        let both = Manifest.blobDigest([a: 1, b: 2])
        #expect(both == Manifest.blobDigest([b: 2, a: 1]))
        #expect(both != Manifest.blobDigest([a: 1]))
        #expect(both != Manifest.blobDigest([a: 1, b: 3]))
        #expect(Manifest.blobDigest([:]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}
