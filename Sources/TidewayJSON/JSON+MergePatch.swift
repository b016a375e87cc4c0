extension JSON {
    /// RFC 7396 JSON Merge Patch: a patch that is not an object replaces the target; an object patch
    /// merges key by key, where `null` removes the key and an object merges recursively (into `{}`
    /// when the target's value is missing or not an object, which also drops the patch's nulls there).
    public func applyingMergePatch(_ patch: JSON) -> JSON {
        guard case .object(let patchFields) = patch else { return patch }
        var result = objectValue ?? [:]
        for (key, patchValue) in patchFields {
            if patchValue == .null {
                result[key] = nil
            } else {
                result[key] = (result[key] ?? .null).applyingMergePatch(patchValue)
            }
        }
        return .object(result)
    }
}
