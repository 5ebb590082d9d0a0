// The store speaks the domain's vocabulary in every record: whoever uses the store uses it too.
@_exported public import HeraldDomain

/// Everything the relay keeps, behind protocols so the storage engine can change: one per
/// concern, and this one combining them for the callers that need them all.
///
/// Times are milliseconds since the Unix epoch, passed in by the caller (the store never reads a
/// clock), so tests and several relay nodes agree on what "now" is.
///
/// Several stores may be open on the same data at once (relay nodes sharing a database, or a
/// node and its restart): every promise below holds across them, not only within one store.
/// `HeraldStoreConformance` checks each promise, and every engine runs it unchanged.
public protocol HeraldStore: ChangeStore, AppStore, DeviceStore, OutboxStore, HeldMessageStore, ProviderTokenStore,
    SealingStore, TranscriptStore, LiveSessionStore, WebhookStore, WebhookQueueStore, CallStore, CallbackStore,
    APIKeyStore, OperatorStore
{}
