import TidewayJSON

/// Every synced collection's schema, checked on every write (insert, and the result of applying an
/// update's merge patch), before anything reaches the database.
public enum CollectionSchemas {
    public static let all: [String: CollectionSchema] = Dictionary(
        uniqueKeysWithValues: (PatrolSchemas.all + ChatSchemas.all + TeamSchemas.all).map { ($0.name, $0) })

    /// The document to store (possibly normalized), or why it is invalid.
    public static func validate(collection: String, document: JSON) -> Result<JSON, SchemaViolation> {
        guard let schema = all[collection] else {
            return .failure(SchemaViolation(path: "", message: "unknown collection"))
        }
        do throws(SchemaViolation) {
            return .success(try schema.validate(document))
        } catch {
            return .failure(error)
        }
    }
}
