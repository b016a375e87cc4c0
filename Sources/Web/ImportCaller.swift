extension CallerInfo {
    /// `tideway import` (Sources/TidewayImport) writing a chat message through the write path
    /// as its author (RChat's ChatMessage); the transaction's claims are that user's.
    package static func importer(userID: String, email: String) -> CallerInfo {
        CallerInfo(fields: Fields(userID: userID, email: email, role: .officer))
    }
}
