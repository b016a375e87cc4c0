import Foundation

/// A request's FastCGI parameters, and its headers among them, looked up by name when asked.
///
/// nginx sends some thirty parameters (`REQUEST_METHOD`, `DOCUMENT_URI`, `HTTP_*` for each
/// header, ...) and a request reads about ten: they are kept as nginx sent them, copied
/// into one buffer with an index of where each starts, and found by a scan of the names.
/// Building a dictionary of every parameter, then one of every header, for each request
/// cost a tenth of the worker's CPU per idle poll (docs/performance.md, "Idle polls").
/// When a name comes twice the last one counts, as it did in the dictionaries.
public struct RequestFields: Sendable {
    /// `NAME=VALUE` entries one after another, each ended by a 0 byte.
    private let bytes: [UInt8]
    /// Where each entry starts in `bytes`.
    private let starts: [Int32]

    /// From the `NAME=VALUE` C strings of a NULL-terminated array (libfcgi's `envp`), copied.
    public init(entries: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) {
        var bytes: [UInt8] = []
        var starts: [Int32] = []
        if var cursor = entries {
            bytes.reserveCapacity(2048)
            starts.reserveCapacity(40)
            while let entry = cursor.pointee {
                starts.append(Int32(bytes.count))
                bytes.append(contentsOf: UnsafeRawBufferPointer(start: entry, count: strlen(entry) + 1))
                cursor += 1
            }
        }
        self.bytes = bytes
        self.starts = starts
    }

    /// The same from names and values (requests built in process).
    public init(_ fields: [String: String] = [:]) {
        var bytes: [UInt8] = []
        var starts: [Int32] = []
        for (name, value) in fields {
            starts.append(Int32(bytes.count))
            bytes += Array(name.utf8) + [UInt8(ascii: "=")] + Array(value.utf8) + [0]
        }
        self.bytes = bytes
        self.starts = starts
    }

    /// The parameter `name` as sent (`REMOTE_ADDR`, `CONTENT_TYPE`, `HTTP_USER_AGENT`).
    public subscript(name: String) -> String? {
        var name = name
        return name.withUTF8 { wanted in lastValue { $0.elementsEqual(wanted) } }
    }

    /// The value of the last entry whose name `matches`.
    private func lastValue(where matches: (UnsafeBufferPointer<UInt8>) -> Bool) -> String? {
        bytes.withUnsafeBufferPointer { all in
            for index in starts.indices.reversed() {
                // The entry without its 0 byte: up to the next one's start, or the end.
                let end = (index + 1 < starts.count ? Int(starts[index + 1]) : all.count) - 1
                let entry = UnsafeBufferPointer(rebasing: all[Int(starts[index])..<end])
                guard let eq = entry.firstIndex(of: UInt8(ascii: "=")),
                      matches(UnsafeBufferPointer(rebasing: entry[..<eq])) else { continue }
                return String(decoding: UnsafeBufferPointer(rebasing: entry[(eq + 1)...]), as: UTF8.self)
            }
            return nil
        }
    }

    /// The header `name` (lower case with dashes: `user-agent`) from its `HTTP_USER_AGENT`
    /// parameter; `content-type` and `content-length` from the parameters nginx sends
    /// without the prefix when they are not empty.
    func header(_ name: String) -> String? {
        if name == "content-type" || name == "content-length" {
            if let value = self[name == "content-type" ? "CONTENT_TYPE" : "CONTENT_LENGTH"], !value.isEmpty { return value }
        }
        var name = name
        return name.withUTF8 { wanted in
            lastValue { sent in
                sent.count == wanted.count + 5 && sent.starts(with: "HTTP_".utf8)
                    && zip(sent.dropFirst(5), wanted).allSatisfy { HTTPRequest.headerNameByte($0) == $1 }
            }
        }
    }
}

/// A request's headers by lower-cased name (`authorization`, `content-type`, `cookie`, ...).
public struct RequestHeaders: Sendable {
    private enum Source: Sendable {
        /// Read from the FastCGI parameters: `HTTP_*`, `CONTENT_TYPE`, `CONTENT_LENGTH`.
        case params(RequestFields)
        /// Given by name (requests built in process).
        case given([String: String])
    }

    private let source: Source

    init(params: RequestFields) { source = .params(params) }
    init(_ headers: [String: String]) { source = .given(headers) }

    public subscript(name: String) -> String? {
        switch source {
        case .params(let params): params.header(name)
        case .given(let headers): headers[name]
        }
    }
}
