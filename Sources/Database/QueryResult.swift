import CLibPQ

/// The rows of one statement, copied out of libpq as text.
public struct QueryResult: Sendable {
    public let columns: [String]
    public let rows: [Row]
    /// Rows affected, for INSERT/UPDATE/DELETE.
    public let affected: Int

    public init(columns: [String], rows: [Row], affected: Int) {
        self.columns = columns
        self.rows = rows
        self.affected = affected
    }

    init(_ result: OpaquePointer) {
        let nfields = Int(PQnfields(result))
        let ntuples = Int(PQntuples(result))
        var columns: [String] = []
        for c in 0..<nfields { columns.append(String(cString: PQfname(result, Int32(c)))) }
        var index: [String: Int] = [:]
        for (i, name) in columns.enumerated() where index[name] == nil { index[name] = i }
        var rows: [Row] = []
        rows.reserveCapacity(ntuples)
        for r in 0..<ntuples {
            var values: [String?] = []
            values.reserveCapacity(nfields)
            for c in 0..<nfields {
                if PQgetisnull(result, Int32(r), Int32(c)) == 1 {
                    values.append(nil)
                } else {
                    let length = Int(PQgetlength(result, Int32(r), Int32(c)))
                    let pointer = UnsafeRawPointer(PQgetvalue(result, Int32(r), Int32(c))!)
                    values.append(String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self))
                }
            }
            rows.append(Row(values: values, index: index))
        }
        self.columns = columns
        self.rows = rows
        self.affected = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// The columns only: a streamed statement's answer, whose rows went elsewhere.
    init(columnsOf result: OpaquePointer) {
        columns = (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
        rows = []
        affected = 0
    }

    public var first: Row? { rows.first }
    public var isEmpty: Bool { rows.isEmpty }
}

public struct Row: Sendable {
    public let values: [String?]
    let index: [String: Int]

    public subscript(_ position: Int) -> String? { values[position] }
    public subscript(_ name: String) -> String? { index[name].flatMap { values[$0] } }

    public func int(_ name: String) -> Int? { self[name].flatMap { Int($0) } }
    public func int64(_ name: String) -> Int64? { self[name].flatMap { Int64($0) } }
    public func bool(_ name: String) -> Bool? { self[name].map { $0 == "t" } }
    public func string(_ name: String) -> String? { self[name] }
}

/// One row of a streamed statement (`Connection.pipeline(_:streaming:row:)`), read in place:
/// valid only during the call it is passed to (libpq frees the row after it); keep copies.
public struct RawRow {
    let result: OpaquePointer
    let row: Int32

    /// The column's text as bytes; nil when it is NULL.
    public func withBytes<T>(_ column: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T? {
        let c = Int32(column)
        guard PQgetisnull(result, row, c) == 0, let value = PQgetvalue(result, row, c) else { return nil }
        return body(UnsafeRawBufferPointer(start: UnsafeRawPointer(value), count: Int(PQgetlength(result, row, c))))
    }

    /// The column's text; nil when it is NULL.
    public subscript(_ column: Int) -> String? {
        withBytes(column) { String(decoding: $0, as: UTF8.self) }
    }
}
