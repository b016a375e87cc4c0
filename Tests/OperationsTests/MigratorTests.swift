import Database
import Foundation
import Testing

@testable import Operations

/// `tideway migrate` on a scratch database built from a copy of Migrations/: ordered files
/// once, repeatable files again only when one changed, and a failing repeatable file
/// leaves the database as it was (Migrations/README.md).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["TIDEWAY_TEST_ADMIN_DATABASE"] != nil, "needs TIDEWAY_TEST_ADMIN_DATABASE (make test)"))
struct MigratorTests {
    static let admin = ProcessInfo.processInfo.environment["TIDEWAY_TEST_ADMIN_DATABASE"]

    @Test func repeatableFilesRunAgainOnlyWhenChanged() throws {
        let name = "tideway_migrator_\(getpid())"
        let server = try Connection(conninfo: Self.admin!)
        try server.executeScript("drop database if exists \(name) with (force)")
        try server.executeScript("create database \(name)")
        defer { _ = try? server.executeScript("drop database if exists \(name) with (force)") }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: folder)
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        try FileManager.default.copyItem(atPath: repo.path + "/Migrations", toPath: folder)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        let db = try Connection(conninfo: Self.admin! + " dbname=\(name)")
        let migrator = Migrator(connection: db, directory: folder)
        let repeatables = try migrator.files(in: folder + "/repeatable").map { "repeatable/" + $0 }
        let first = try migrator.migrate()
        #expect(first.contains("0001_roles_and_schema.sql") && first.contains("0004_sync_documents.sql"))
        #expect(Array(first.suffix(repeatables.count)) == repeatables && repeatables.count > 10)
        #expect(try migrator.migrate() == [])

        // One repeatable file edited: all of them run again, in order.
        let idle = folder + "/repeatable/0014_idle_polls.sql"
        try (String(contentsOfFile: idle, encoding: .utf8) + "-- edited\n").write(toFile: idle, atomically: true, encoding: .utf8)
        #expect(try migrator.migrate() == repeatables)
        #expect(try migrator.migrate() == [])

        // A failing file: nothing of the run stays (not even what earlier files did again).
        try """
            create or replace function app.migrator_probe() returns int language sql as $$ select 1 $$;
            select 1 / 0;
            """.write(toFile: folder + "/repeatable/0099_broken.sql", atomically: true, encoding: .utf8)
        try "drop function app.unchanged(bytea, text[], bigint[], bigint[]);\n"
            .write(toFile: folder + "/repeatable/0098_drops.sql", atomically: true, encoding: .utf8)
        #expect(throws: Migrator.MigrationError.self) { try migrator.migrate() }
        let left = try db.execute("""
            select to_regprocedure('app.migrator_probe()') is null as no_probe,
                   to_regprocedure('app.unchanged(bytea, text[], bigint[], bigint[])') is not null as kept,
                   (select count(*) from public.tideway_repeatables) as recorded
            """).rows.first
        #expect(left?["no_probe"] == "t" && left?["kept"] == "t" && left?["recorded"] == String(repeatables.count))
        try FileManager.default.removeItem(atPath: folder + "/repeatable/0099_broken.sql")
        try FileManager.default.removeItem(atPath: folder + "/repeatable/0098_drops.sql")
        #expect(try migrator.migrate() == [])

        // A database built from files that are gone (before the baseline) is refused by name.
        try db.executeScript("insert into public.tideway_migrations (name) values ('0015_apply_change_static.sql')")
        #expect { try migrator.migrate() } throws: { ($0 as? Migrator.MigrationError)?.file == "0015_apply_change_static.sql" }
    }
}
