import Foundation
import HeraldDevice
import HeraldSimulation
import Testing

/// The diagram's lanes grouped by where they run: a second device's lanes stand under its own
/// header, in the first phone's order, named without the device (which the header says). How the
/// page reads in a browser (sticky headers and axis) is checked in chromium by
/// `Tests/interop/test_timelines_browser.py`.
@Suite("Timeline diagram lanes")
struct TimelineDiagramTests {
    /// The values of `attribute` on the page's elements of `class`, in page order.
    static func values(_ attribute: String, of kind: String, in page: String) -> [String] {
        page.components(separatedBy: "<div class=\"\(kind)\" \(attribute)=\"").dropFirst().map {
            String($0.prefix { $0 != "\"" })
        }
    }

    @Test("servers, then the phone, then the pad: each device's lanes under its header, in one order")
    func lanesGroupedByDevice() {
        // One instant: the steps stand in the order recorded.
        let timeline = Timeline(clock: TestClock(frozenAt: 1_000))
        let pad = Timeline(sharing: timeline, device: "pad")
        // Recorded in an order unlike the lanes': the pad's user and app first, a server late.
        pad.record("user", "app", "app launched")
        pad.record("app", "sdk", "session 1 started")
        timeline.record("user", "app", "app launched")
        timeline.record("callkit", "user", "phone rings", userSees: "Dana")
        timeline.record("relay", "apns", "push accepted by APNs")
        pad.record("pushkit", "callkit", "incoming call reported")
        timeline.record("backend", "relay", "POST /v1/calls → 202")

        let page = timeline.html(title: "Herald: lanes")
        #expect(
            Self.values("data-lane", of: "lane", in: page) == [
                "backend", "relay", "apns", "app", "callkit", "user",
                "sdk · pad", "app · pad", "pushkit · pad", "callkit · pad", "user · pad",
            ]
        )
        #expect(Self.values("data-device", of: "device", in: page) == ["servers", "phone", "pad"])
        #expect(page.contains("data-device=\"pad\" style=\"grid-column: span 5\""))
        // The device is in the header over the lane: the lane says only what runs there.
        #expect(page.contains("title=\"pushkit · pad\">pushkit</div>"))
        // Each step once on the time axis, and once as an arrow.
        #expect(page.components(separatedBy: "<g class=\"step\"").count - 1 == timeline.all.count)
        #expect(page.components(separatedBy: "<g class=\"arrow\"").count - 1 == timeline.all.count)
    }
}
