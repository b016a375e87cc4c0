import Foundation
import TidewayJSON

/// Adapter from what Foundation's `JSONSerialization` returns to our `JSON` value.
///
/// It lives alone in this file because the demo loader only needs it until our own
/// parser lands; then this file can be swapped for a call to that parser.
extension JSON {
    public struct FoundationConversionError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(foundationObject object: Any) throws {
        switch object {
        case is NSNull:
            self = .null
        case let string as String:
            self = .string(string)
        case let number as NSNumber:
            self = JSON(number: number)
        case let array as [Any]:
            self = .array(try array.map { try JSON(foundationObject: $0) })
        case let dictionary as [String: Any]:
            self = .object(JSONObject(try dictionary.mapValues { try JSON(foundationObject: $0) }))
        default:
            throw FoundationConversionError(description: "unsupported value of type \(type(of: object))")
        }
    }

    /// `JSONSerialization` hands out every number and boolean as `NSNumber`; booleans are
    /// a distinct subclass, and the Objective-C type code tells integers from doubles.
    private init(number: NSNumber) {
        if type(of: number) == type(of: NSNumber(value: true)) {
            self = .bool(number.boolValue)
            return
        }
        let code = String(cString: number.objCType)
        let fitsInt64 = code != "Q" || number.uint64Value <= UInt64(Int64.max)
        if "cCsSiIlLqQ".contains(code), fitsInt64 {
            self = .int(number.int64Value)
        } else {
            self = .double(number.doubleValue)
        }
    }
}
