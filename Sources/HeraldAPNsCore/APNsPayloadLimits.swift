public import HeraldEncoding

extension JSONLimits {
    /// What the APNs sandbox takes as a payload: one JSON object of any keys (Apple documents
    /// no rule on keys given twice, so they pass), nested at most 64 levels; the payload's size
    /// limit (4 or 5 KB) bounds the rest.
    public static let apnsPayload = JSONLimits(
        maximumDepth: 64,
        maximumValues: 5 * 1024,
        maximumNumberLength: 5 * 1024,
        refusesDuplicateKeys: false
    )
}
