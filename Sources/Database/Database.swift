public enum DatabaseModule { public static let name = "Database" }
