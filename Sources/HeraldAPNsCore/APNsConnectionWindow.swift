/// The HTTP/2 connection-level receive window both ends of an APNs connection keep open, the
/// provider's client and the sandbox's listener: 16 MiB instead of the protocol's 65,535 bytes,
/// so hundreds of streams (pushes one way, answers the other) never wait on a WINDOW_UPDATE
/// round trip. The numbers only; each end writes the frames itself.
public enum APNsConnectionWindow {
    /// The window kept open, in bytes.
    public static let size = 1 << 24

    /// The protocol's initial connection window (RFC 9113 §6.9.2), which no SETTINGS changes.
    static let initial = 65_535

    /// The WINDOW_UPDATE increment that opens the window, sent once when the connection starts.
    public static let opening = size - initial

    /// The increment that fills the window back up once the inbound window reported by the HTTP/2
    /// handler (`inbound` bytes left) has fallen below half of it; nil while at least half is
    /// left, or when the handler reports none.
    public static func topUp(inbound: Int?) -> Int? {
        guard let inbound, inbound < size / 2 else { return nil }
        return size - inbound
    }
}
