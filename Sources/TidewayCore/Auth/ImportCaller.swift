extension CallerInfo {
    /// `tideway import` (Sources/TidewayImport) writing one agency's documents through the
    /// write path: an agency administrator of that agency without a user (the transaction's
    /// claims say the same: role agencyAdmin, that agency, no user id, device "import").
    public static func importer(agency: String) -> CallerInfo {
        CallerInfo(fields: Fields(displayName: "Tideway import", role: .agencyAdmin, agency: agency))
    }
}

extension CallerInfo {
    /// `tideway import` writing a chat message as its author (RChat's ChatMessage): the
    /// transaction's claims are that user's.
    public static func importer(userID: String, email: String) -> CallerInfo {
        CallerInfo(fields: Fields(userID: userID, email: email, role: .officer))
    }
}
