import HeraldStore

/// How long a chat's customer has waited for the agent, read off the transcript (docs/relay.md,
/// "Queue order"): the queue position of a chat push for an app that orders by the customer's
/// wait.
enum CustomerWait {
    /// When the customer's oldest message still unanswered by the agent arrived, as the
    /// transcript stood just before `position` (the agent event that answers it): the first
    /// customer event after the last agent event before `position`. Events of `ignoring` types
    /// (typing notices) neither start nor end a wait. Nil when nothing of the customer's was
    /// waiting (the agent wrote twice in a row, or first).
    static func since(
        in events: [TranscriptEvent],
        before position: Int,
        ignoring filtered: Set<String>
    ) -> Int64? {
        var since: Int64?
        for event in events where event.position < position && !filtered.contains(event.type) {
            if event.fromAgent {
                since = nil
            } else if since == nil {
                since = event.at
            }
        }
        return since
    }
}
