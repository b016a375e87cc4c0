import Testing

@testable import Database

@Suite struct SQLTests {
    @Test func everyInterpolationIsABoundParameter() {
        let name = "x'; drop table users; --"
        let limit = 5
        let sql: SQL = "select * from t where name = \(name) and n < \(limit) and tag = any(\(["a", "b\"c"]))"
        #expect(sql.text == "select * from t where name = $1 and n < $2 and tag = any($3)")
        #expect(sql.binds == [name, "5", #"{"a","b\"c"}"#])
    }

    @Test func fragmentsAreRenumbered() {
        let a: SQL = "a = \(1)"
        let b: SQL = "b = \(2) or c = \(3)"
        let joined = SQL.join([a, b], separator: " and ")
        #expect(joined.text == "a = $1 and b = $2 or c = $3")
        let nested: SQL = "select \(0) where \(joined)"
        #expect(nested.text == "select $1 where a = $2 and b = $3 or c = $4")
        #expect(nested.binds == ["0", "1", "2", "3"])
    }

    @Test func joiningManyPartsNumbersTheirParametersInOrder() {
        let parts: [SQL] = (1...7).map { "select \($0) as n, \("t\($0)") as t" }
        let joined = SQL.join(parts, separator: " union all ")
        #expect(joined.text == (0..<7).map { "select $\(2 * $0 + 1) as n, $\(2 * $0 + 2) as t" }.joined(separator: " union all "))
        #expect(joined.binds == (1...7).flatMap { ["\($0)", "t\($0)"] })
        #expect(SQL.join([], separator: ", ").text == "" && SQL.join([], separator: ", ").binds.isEmpty)
        #expect(SQL.join(["only \(1)"], separator: ", ").text == "only $1")
    }

    @Test func renumberingShiftsEveryPlaceholderAndNothingElse() {
        #expect(SQL.renumber("f($1, $12) || 'é$' || $", offset: 9) == "f($10, $21) || 'é$' || $")
        #expect(SQL.renumber("a = $1", offset: 0) == "a = $1")
        #expect(SQL.renumber("no placeholders", offset: 3) == "no placeholders")
        #expect(SQL.renumber("$1$2", offset: 99) == "$100$101")
    }

    @Test func nullsAndBytes() {
        let missing: String? = nil
        let sql: SQL = "values (\(missing), \(SQLBytes([0, 255, 16])))"
        #expect(sql.binds == [nil, "\\x00ff10"])
    }

    @Test func textArraysEscapeBackslashesAndQuotes() {
        let sql: SQL = "select \(["plain", #"a\b"#, #"say "hi""#, "", "é,{}"])"
        #expect(sql.binds == [#"{"plain","a\\b","say \"hi\"","","é,{}"}"#])
    }
}
