import Database
import Foundation
import Testing

@testable import Sync

/// Swift and the database define the collections and the partition grammar once each:
/// `SyncCollection` / `Partition` here, `app.collections` / `app.partition_kind` in the
/// migrations (from which the per-table SQL is written). These tests hold the two to the
/// same answers, against the migrated test database.
@Suite(.enabled(if: CatalogDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct CatalogAgreementTests {
    @Test func collectionsAreTheSameRowsInSwiftAndSQL() throws {
        let db = try Connection(conninfo: CatalogDatabase.conninfo!)
        let rows = try db.execute("select name, table_name, partition_kind from app.collections order by name").rows
        let sql = rows.map { [$0["name"] ?? "", $0["table_name"] ?? "", $0["partition_kind"] ?? ""] }
        let swift = SyncCollection.allCases.map { [$0.rawValue, $0.table, $0.partitionKind.rawValue] }
            .sorted { $0[0] < $1[0] }
        #expect(sql == swift)
        #expect(sql.count == 12)
        // Every table of schema sync is a collection's, and the other way round.
        let tables = try db.execute("select tablename from pg_tables where schemaname = 'sync' order by 1").rows
            .compactMap { $0["tablename"] }
        #expect(tables == swift.map { $0[1] }.sorted())
        // app.document_table is written from the same rows.
        for collection in SyncCollection.allCases {
            let table = try db.execute("select app.document_table(\(collection.rawValue)) as t").rows.first?["t"]
            #expect(table == collection.table)
        }
        #expect(try db.execute("select app.document_table('nope') as t").rows.first?["t"] == nil)
    }

    @Test func partitionKindsListTheirCollectionsOnce() {
        let listed = Partition.Kind.allCases.flatMap(\.collections)
        #expect(listed.count == SyncCollection.allCases.count && Set(listed) == Set(SyncCollection.allCases))
    }

    /// Tricky strings and the kind each must be (nil: not a partition).
    static let grammar: [(String, Partition.Kind?)] = [
        ("agency=Gabon", .agency), ("agency=T 1a2b3c4d", .agency), ("agency=a.b_c-d", .agency), ("agency=.", .agency),
        ("agency=" + String(repeating: "x", count: 64), .agency), ("agency=" + String(repeating: "x", count: 65), nil),
        ("agency=", nil), ("agency= Gabon", nil), ("agency=Gabon ", nil), ("agency= ", nil), ("agency=Ga bon", .agency),
        ("agency=Parque Nacional Galápagos", .agency), ("agency=Gabón", .agency), ("agency=ÀÖØöøɏḀỿ", .agency),
        ("agency=a×b", nil), ("agency=a÷b", nil), ("agency=\u{BF}", nil), ("agency=\u{250}", nil), ("agency=\u{1DFF}", nil),
        ("agency=\u{1F00}", nil), ("agency=Ελλάδα", nil), ("agency=\u{1F41F}", nil), ("agency=Gabo\u{301}n", nil),
        ("agency=" + String(repeating: "é", count: 64), .agency), ("agency=" + String(repeating: "é", count: 65), nil),
        ("agency=a\u{A0}", nil), ("agency=\u{A0}a", nil), ("agency=a/b", nil), ("agency=a=b", nil), ("agency=a,b", nil),
        ("agency=a\tb", nil), ("agency=a\nb", nil), ("agency=Gabon\n", nil), ("agency=\u{0663}", nil), ("agency=\u{212A}", nil),
        ("agency=a\u{200B}", nil), ("agency==", nil), ("Agency=Gabon", nil), ("agency =Gabon", nil), (" agency=Gabon", nil),
        ("agency=\u{301}Gabon", nil),
        ("user=0b8e7f1c-3a2d-4c5e-9f10-1a2b3c4d5e6f", .user), ("user=0B8E7F1C-3A2D-4C5E-9F10-1A2B3C4D5E6F", nil),
        ("user=0b8e7f1c3a2d4c5e9f101a2b3c4d5e6f", nil), ("user=0b8e7f1c-3a2d-4c5e-9f10-1a2b3c4d5e6f\n", nil),
        ("user=0b8e7f1c-3a2d-4c5e-9f10-1a2b3c4d5e6", nil), ("user=", nil), ("user=a=b", nil),
        ("all-users=all-the-users", .allUsers), ("all-users=All-the-users", nil), ("all-users=all-the-users ", nil),
        ("all-users=", nil), ("all_users=all-the-users", nil),
        ("conversation=abc_-1", .conversation), ("conversation=" + String(repeating: "c", count: 64), .conversation),
        ("conversation=" + String(repeating: "c", count: 65), nil), ("conversation=a.b", nil), ("conversation=a b", nil),
        ("conversation=é", nil), ("conversation=\u{FF41}", nil), ("conversation=", nil),
        ("team=0b8e7f1c-3a2d-4c5e-9f10-1a2b3c4d5e6f", .team), ("team=0B8E7F1C-3A2D-4C5E-9F10-1A2B3C4D5E6F", nil),
        ("team=0b8e7f1c3a2d4c5e9f101a2b3c4d5e6f", nil), ("team=0b8e7f1c-3a2d-4c5e-9f10-1a2b3c4d5e6f\n", nil),
        ("team=", nil), ("team=crew", nil), ("Team=0b8e7f1c-3a2d-4c5e-9f10-1a2b3c4d5e6f", nil),
        ("foo", nil), ("", nil), ("=", nil), ("foo=bar", nil), ("agency", nil),
    ]

    @Test func partitionGrammarIsTheSameInSwiftAndSQL() throws {
        let db = try Connection(conninfo: CatalogDatabase.conninfo!)
        for (text, expected) in Self.grammar {
            let sql = try db.execute("select app.partition_kind(\(text)) as kind").rows.first?["kind"]
            #expect(Partition(text)?.kind == expected, "Swift on \(text.debugDescription)")
            #expect(sql == expected?.rawValue, "SQL on \(text.debugDescription)")
        }
    }

    /// The database holds agency keys and conversation ids to the same grammar.
    @Test func agencyKeysAndConversationIdsFollowTheGrammar() throws {
        let db = try Connection(conninfo: CatalogDatabase.conninfo!)
        for (text, expected) in Self.grammar where text.hasPrefix("agency=") {
            let key = String(text.dropFirst("agency=".count))
            let ok = try db.execute("select app.partition_kind('agency=' || \(key)) = 'agency' as ok").rows.first?["ok"]
            #expect((ok == "t") == (expected == .agency), "agency key \(key.debugDescription)")
        }
        let checked = try db.execute("""
            select conrelid::regclass::text as t from pg_constraint
             where contype = 'c' and pg_get_constraintdef(oid) like '%app.partition_kind(%' order by 1
            """).rows.compactMap { $0["t"] }
        #expect(checked == ["app.agencies", "app.conversations", "app.grants"])
    }
}

enum CatalogDatabase {
    static let conninfo = ProcessInfo.processInfo.environment["TIDEWAY_TEST_DATABASE"]
}
