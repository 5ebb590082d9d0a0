/// The console's stylesheet and script, served from the binary under `/console/assets/`: no
/// toolchain builds them, no CDN serves them, and the Content-Security-Policy allows only them.
enum ConsoleAssets {
    static let css = """
        :root { --ink: #1b1f24; --muted: #4f5b66; --line: #d0d7de; --bg: #f6f8fa; --card: #fff;
          --accent: #0b57d0; --ok: #1a7f37; --bad: #c62828; --warn: #b35900; --info: #475467; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
          color: var(--ink); background: var(--bg); }
        a { color: var(--accent); }
        a:focus, button:focus, input:focus { outline: 3px solid #ffbf47; outline-offset: 1px; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 8px; top: 8px; background: #fff; padding: 6px; z-index: 2; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
        .bar { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 18px; padding: 8px 16px;
          background: #14213d; color: #fff; }
        .bar a { color: #fff; text-decoration: none; }
        .bar .brand { font-weight: 700; font-size: 17px; }
        .bar nav ul { display: flex; flex-wrap: wrap; gap: 4px 14px; list-style: none; margin: 0; padding: 0; }
        .bar nav a[aria-current] { text-decoration: underline; text-underline-offset: 4px; }
        .sign-out { margin-left: auto; display: flex; gap: 8px; align-items: center; }
        main { padding: 12px 16px 40px; max-width: 1400px; margin: 0 auto; }
        h1 { font-size: 22px; margin: 8px 0 14px; }
        h2 { font-size: 17px; margin: 22px 0 8px; }
        .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
        .card .label { display: block; color: var(--muted); font-size: 13px; }
        .card .value { display: block; font-size: 20px; font-weight: 600; }
        table { width: 100%; border-collapse: collapse; background: var(--card); }
        th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
        th { background: #eef1f4; font-weight: 600; }
        .pushes, .devices { font-size: 14px; }
        @media (max-width: 760px) {
          table { display: block; overflow-x: auto; white-space: nowrap; }
          .sign-out { margin-left: 0; }
        }
        form.sign-in { max-width: 360px; display: grid; gap: 6px; }
        form.search { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 12px; }
        label { font-weight: 600; }
        input { font: inherit; padding: 6px 8px; border: 1px solid #8c959f; border-radius: 6px; min-width: 0; }
        form.search input { flex: 1 1 260px; }
        button, .button { font: inherit; padding: 6px 14px; border-radius: 6px; border: 1px solid #0a3f9c;
          background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; display: inline-block; }
        .danger { background: var(--bad); border-color: #8e1c1c; color: #fff; }
        .error { color: var(--bad); font-weight: 600; }
        .notice { color: var(--ok); font-weight: 600; }
        .note, .detail { color: var(--muted); font-size: 13px; }
        .detail { display: block; }
        .state { font-weight: 600; }
        .state.delivered, .state.finished { color: var(--ok); }
        .state.failed, .state.token_dead { color: var(--bad); }
        .state.queued, .state.sending, .state.running { color: var(--warn); }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; background: var(--card);
          border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; overflow-wrap: anywhere; }
        ol.road { list-style: none; padding: 0; border-left: 3px solid var(--line); margin-left: 8px; }
        ol.road li { position: relative; padding: 6px 0 8px 16px; }
        ol.road li::before { content: ""; position: absolute; left: -8px; top: 11px; width: 12px; height: 12px;
          border-radius: 50%; background: var(--info); }
        ol.road li.ok::before { background: var(--ok); }
        ol.road li.bad::before { background: var(--bad); }
        ol.road li.retry::before { background: var(--warn); }
        ol.road .actor { font-weight: 600; margin: 0 6px; }
        ul.legend { display: flex; flex-wrap: wrap; gap: 12px; list-style: none; padding: 0; font-size: 13px; }
        .swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
        .chart-box { overflow-x: auto; }
        svg.chart { width: 100%; min-width: 560px; height: auto; background: var(--card);
          border: 1px solid var(--line); border-radius: 8px; }
        svg .axis, svg .grid { stroke: #8c959f; stroke-width: 1; }
        svg .grid { stroke-dasharray: 3 3; stroke: var(--line); }
        svg .tick { font-size: 11px; fill: var(--muted); }
        .s-delivered { fill: #1a7f37; background: #1a7f37; } .s-failed { fill: #c62828; background: #c62828; }
        .s-token-dead { fill: #b35900; background: #b35900; } .s-expired { fill: #6e7781; background: #6e7781; }
        .s-skipped { fill: #afb8c1; background: #afb8c1; }
        .n-apns { fill: #0b57d0; background: #0b57d0; } .n-fcm { fill: #e37400; background: #e37400; }
        .n-webpush { fill: #7b1fa2; background: #7b1fa2; } .n-hms { fill: #c62828; background: #c62828; }
        path.line { fill: none; stroke-width: 2; }
        ul.flows { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 10px;
          list-style: none; padding: 0; }
        ul.flows h2 { margin-top: 0; }
        .diagram { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
        svg.sequence { min-width: 600px; }
        svg.sequence .lane { font-weight: 600; font-size: 13px; fill: var(--ink); }
        svg.sequence .lifeline { stroke: var(--line); stroke-dasharray: 4 4; }
        svg.sequence .arrow { stroke: #14213d; stroke-width: 1.5; fill: none; }
        svg.sequence .head { fill: #14213d; }
        svg.sequence .step { font-size: 12px; fill: var(--ink); }
        svg.sequence .time { font-size: 11px; fill: var(--muted); }
        tr.fresh { animation: fresh 2s ease-out; }
        @keyframes fresh { from { background: #fff4c2; } to { background: transparent; } }
        """

    static let javascript = """
        "use strict";
        // The console's live parts; every page works without them.
        (function () {
          function cell(row, text, link) {
            var td = document.createElement("td");
            if (link && text) {
              var a = document.createElement("a");
              a.href = link;
              a.textContent = text;
              td.appendChild(a);
            } else {
              td.textContent = text || "";
            }
            row.appendChild(td);
            return td;
          }
          function time(ms) {
            return new Date(ms).toISOString();
          }
          var live = document.getElementById("live");
          if (live && window.EventSource) {
            var status = document.getElementById("live-status");
            var body = live.tBodies[0];
            var source = new EventSource(live.getAttribute("data-stream"));
            source.onopen = function () { status.textContent = "Live: new pushes appear as they happen."; };
            source.onerror = function () { status.textContent = "Reconnecting to the live stream…"; };
            source.addEventListener("gap", function () {
              status.textContent = "Live: more pushes arrive than the stream shows; some were skipped (search finds every push).";
            });
            source.addEventListener("push", function (message) {
              var push = JSON.parse(message.data);
              var row = document.createElement("tr");
              row.setAttribute("data-push", push.push_id);
              row.className = "fresh";
              cell(row, time(push.at));
              cell(row, push.app);
              cell(row, push.user, push.user ? "/console/users/" + encodeURIComponent(push.user) : null);
              cell(row, push.kind);
              cell(row, push.network);
              var state = cell(row, push.state + (push.reason ? " (" + push.reason + ")" : ""));
              state.className = "state " + push.state;
              cell(row, push.stage);
              cell(row, push.push_id, "/console/pushes/" + encodeURIComponent(push.push_id));
              var old = body.querySelector("tr[data-push='" + push.push_id.replace(/[^A-Za-z0-9_-]/g, "") + "']");
              if (old) { body.replaceChild(row, old); } else { body.insertBefore(row, body.firstChild); }
              while (body.rows.length > 500) { body.deleteRow(body.rows.length - 1); }
            });
          }
          var figures = document.querySelector("[data-refresh]");
          if (figures && window.fetch) {
            setInterval(function () {
              fetch(figures.getAttribute("data-refresh"), { credentials: "same-origin" })
                .then(function (answer) { return answer.ok ? answer.text() : null; })
                .then(function (html) { if (html !== null) { figures.innerHTML = html; } })
                .catch(function () {});
            }, 15000);
          }
          var diagram = document.getElementById("diagram");
          if (diagram && diagram.getAttribute("data-stream") && window.EventSource) {
            var state = document.getElementById("run-state");
            var line = document.getElementById("run-line");
            var playing = state.getAttribute("data-state");
            if (playing === "waiting" || playing === "running") {
              var steps = new EventSource(diagram.getAttribute("data-stream"));
              steps.addEventListener("diagram", function (message) { diagram.innerHTML = message.data; });
              steps.addEventListener("state", function (message) {
                state.textContent = message.data;
                state.setAttribute("data-state", message.data);
                state.className = "state " + message.data;
              });
              steps.addEventListener("line", function (message) { line.textContent = message.data; });
              steps.addEventListener("end", function () { steps.close(); });
            }
          }
        })();
        """
}
