import Database
import Testing

@Test func databaseModuleLinks() {
    #expect(DatabaseModule.name == "Database")
}
