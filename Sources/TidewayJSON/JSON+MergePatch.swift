extension JSON {
    /// RFC 7396 JSON Merge Patch: a patch that is not an object replaces the target; an object patch
    /// merges key by key, where `null` removes the key and an object merges recursively (into `{}`
    /// when the target's value is missing or not an object, which also drops the patch's nulls there).
    public func applyingMergePatch(_ patch: JSON) -> JSON {
        guard case .object(let patchFields) = patch else { return patch }
        // Merged in a dictionary and sorted once: a patch's keys inserted one at a time into the
        // sorted fields would cost a shift each (and, with non-ASCII keys, a scan each).
        var result = objectValue?.dictionary ?? [:]
        for (key, patchValue) in patchFields {
            if patchValue == .null {
                result[key] = nil
            } else {
                result[key] = (result[key] ?? .null).applyingMergePatch(patchValue)
            }
        }
        return .object(JSONObject(result))
    }
}
