import Foundation
public import HeraldCrypto

extension AppGroupStore {
    /// How many shown pushes the app remembers by default, to drop a repeat.
    ///
    /// The relay delivers at least once: after a crash it sends again the pushes it had sent but
    /// not yet recorded (at most its dispatcher's workers × batch size, 512 by default; see
    /// docs/performance.md), usually within a minute. A phone gets only its own share of those,
    /// so the last 1,000 of its pushes cover the window many times over.
    public static let defaultRememberedPushes = 1_000

    /// The name a push is remembered by: its kind and its message or call id, the id the
    /// envelope's additional data binds. The relay sends at most one push per message or call
    /// and device, and a re-sent push is the same stored push, so this names the push on this
    /// device; once the envelope opened, a carrier cannot make it name another.
    public static func shownPushID(kind: PushKind, subjectID: String) -> String {
        "\(kind):\(subjectID)"
    }

    /// Records `pushID` as shown, keeping the newest `capacity` ids; returns false when it was
    /// already recorded (a repeat to drop).
    ///
    /// The read-modify-write holds an exclusive `flock` on `shown-pushes.lock`: on a phone the
    /// app and its extensions are separate processes sharing the list. A list that cannot be
    /// read starts empty, so a damaged file costs at worst some repeats shown, never a push lost.
    public func recordShown(_ pushID: String, capacity: Int = defaultRememberedPushes) throws(DeviceError) -> Bool {
        guard capacity > 0 else { return true }
        let lock = openLockFile(path(Self.shownLockName))
        guard lock >= 0 else { throw .store("cannot open \(path(Self.shownLockName))") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .store("cannot lock \(path(Self.shownLockName))") }
        }
        var shown = shownPushIDs()
        if shown.contains(pushID) { return false }
        shown.append(pushID)
        if shown.count > capacity { shown.removeFirst(shown.count - capacity) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        do {
            try replace(Self.shownListName, with: Array(try encoder.encode(shown)) + [0x0A])
        } catch let error as DeviceError {
            throw error
        } catch {
            throw .store("cannot write \(path(Self.shownListName))")
        }
        return true
    }

    /// The remembered ids of shown pushes, oldest first.
    public func shownPushIDs() -> [String] {
        guard let data = FileManager.default.contents(atPath: path(Self.shownListName)) else { return [] }
        return (try? JSONDecoder().decode([String].self, from: data)) ?? []
    }

    static let shownListName = "shown-pushes.json"
    static let shownLockName = "shown-pushes.lock"
}

/// At file scope: inside the store's extension, `open` names the store's own method.
private func openLockFile(_ path: String) -> Int32 {
    open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
}
