public enum FastCGIModule { public static let name = "FastCGI" }
