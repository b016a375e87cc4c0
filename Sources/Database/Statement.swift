/// A statement with the answer it is read as: the rows decoded to a type, the first row, the
/// number of rows affected, or nothing. A batch of them goes out in one round trip and comes
/// back as a tuple of typed answers, so no handler reads `results[2]` and hopes it is the
/// statement it thinks:
///
///     let (user, devices) = try tx.run(Statement.first(userQuery, as: UserRow.self),
///                                      Statement.rows(devicesQuery, as: DeviceRow.self))
public struct Statement<Answer> {
    public let sql: SQL
    let read: (QueryResult) throws(DatabaseError) -> Answer

    public init(_ sql: SQL, read: @escaping (QueryResult) throws(DatabaseError) -> Answer) {
        self.sql = sql
        self.read = read
    }
}

extension Statement {
    /// Every row, decoded.
    public static func rows<Decoded: RowDecodable>(_ sql: SQL, as type: Decoded.Type) -> Statement<[Decoded]>
    where Answer == [Decoded] {
        Statement(sql) { result throws(DatabaseError) in try result.decode(Decoded.self) }
    }

    /// The first row decoded, or nil when there is none.
    public static func first<Decoded: RowDecodable>(_ sql: SQL, as type: Decoded.Type) -> Statement<Decoded?>
    where Answer == Decoded? {
        Statement(sql) { result throws(DatabaseError) in try result.first.map { row throws(DatabaseError) in try Decoded(row: row) } }
    }

    /// Rows kept as rows, for code that reads a generic shape (a page's columns, a menu's
    /// JSON documents) rather than one row type.
    public static func rows(_ sql: SQL) -> Statement<[Row]> where Answer == [Row] {
        Statement(sql) { $0.rows }
    }

    /// One column of the first row (`select count(*) as n …`); nil when there is no row or
    /// the value is NULL.
    public static func value<Value: ColumnDecodable>(_ sql: SQL, _ column: String, as type: Value.Type) -> Statement<Value?>
    where Answer == Value? {
        Statement(sql) { result throws(DatabaseError) in try result.first?.decodeIfPresent(column, as: Value.self) }
    }

    /// How many rows an INSERT, UPDATE or DELETE touched.
    public static func affected(_ sql: SQL) -> Statement<Int> where Answer == Int {
        Statement(sql) { $0.affected }
    }

    /// A statement run for its effect only.
    public static func effect(_ sql: SQL) -> Statement<Void> where Answer == Void {
        Statement(sql) { _ in }
    }
}

extension Transaction {
    /// The statements in one round trip, each answer read as its statement says.
    public func run<each Answer>(_ statements: repeat Statement<each Answer>) throws(DatabaseError) -> (repeat each Answer) {
        var sql: [SQL] = []
        for statement in repeat each statements { sql.append(statement.sql) }
        let results = try queries(sql)
        var next = 0
        func read<A>(_ statement: Statement<A>) throws(DatabaseError) -> A {
            defer { next += 1 }
            return try statement.read(results[next])
        }
        return (repeat try read(each statements))
    }

    /// One statement, its answer read as it says.
    public func run<Answer>(_ statement: Statement<Answer>, thenCommit: Bool) throws(DatabaseError) -> Answer {
        try statement.read(query(statement.sql, thenCommit: thenCommit))
    }
}

/// A row type read by column name, once, in one place: `init(row:)` names each column with
/// its type, and a missing or malformed required column is an error, not a silent default.
public protocol RowDecodable {
    init(row: Row) throws(DatabaseError)
}

extension QueryResult {
    public func decode<Decoded: RowDecodable>(_ type: Decoded.Type) throws(DatabaseError) -> [Decoded] {
        var decoded: [Decoded] = []
        decoded.reserveCapacity(rows.count)
        for row in rows { decoded.append(try Decoded(row: row)) }
        return decoded
    }
}

/// PostgreSQL's text form of a column's type.
public protocol ColumnDecodable {
    init?(column text: String)
}

extension String: ColumnDecodable { public init?(column text: String) { self = text } }
extension Int: ColumnDecodable { public init?(column text: String) { self.init(text) } }
extension Int64: ColumnDecodable { public init?(column text: String) { self.init(text) } }
extension Double: ColumnDecodable { public init?(column text: String) { self.init(text) } }
extension Bool: ColumnDecodable {
    public init?(column text: String) {
        switch text {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}

extension Row {
    /// A required column: missing, NULL or malformed is a `protocolViolation` naming it.
    public func decode<Value: ColumnDecodable>(_ name: String, as type: Value.Type = Value.self) throws(DatabaseError) -> Value {
        guard let text = self[name], let value = Value(column: text) else {
            throw DatabaseError(kind: .protocolViolation, detail: "column \(name): expected a \(Value.self), got \(self[name] ?? "NULL")")
        }
        return value
    }

    /// A column that may be NULL; present but malformed is still an error.
    public func decodeIfPresent<Value: ColumnDecodable>(_ name: String, as type: Value.Type = Value.self) throws(DatabaseError) -> Value? {
        guard let text = self[name] else { return nil }
        guard let value = Value(column: text) else {
            throw DatabaseError(kind: .protocolViolation, detail: "column \(name): expected a \(Value.self), got \(text)")
        }
        return value
    }
}
