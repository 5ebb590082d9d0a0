import Mustache

/// The console's pages as Mustache templates, compiled once at start (a typo fails the first
/// test that starts a console, not a page in production). In the binary, not files beside it:
/// one binary is the whole console, whatever directory it runs in.
enum ConsoleTemplates {
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, text) in all { try library.register(text, named: name) }
        return library
    }

    static let all: [(String, String)] = [
        ("layout", layout), ("error", error), ("sign-in", signIn), ("overview", overview),
        ("overview-figures", overviewFigures), ("live", live), ("search", search), ("push", push),
        ("user", user), ("deactivate", deactivate), ("calls", calls), ("call", call),
        ("callbacks", callbacks), ("simulations", simulations), ("simulation", simulation), ("audit", audit),
        ("push-rows", pushRows), ("push-table-head", pushTableHead),
    ]

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · Herald console</title>
        <link rel="stylesheet" href="/console/assets/console.css">
        <script src="/console/assets/console.js" defer></script>
        {{#refresh}}<noscript><meta http-equiv="refresh" content="{{refresh}}"></noscript>{{/refresh}}
        </head>
        <body>
        <a class="skip" href="#main">Skip to the content</a>
        {{#operator}}
        <header class="bar">
        <a class="brand" href="/console/overview">Herald</a>
        <nav aria-label="Console"><ul>
        {{#nav}}<li><a href="{{href}}"{{#current}} aria-current="page"{{/current}}>{{label}}</a></li>{{/nav}}
        </ul></nav>
        <form class="sign-out" method="post" action="/console/sign-out">
        <span class="who">{{name}} · {{role}}</span>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">Sign out</button>
        </form>
        </header>
        {{/operator}}
        {{^operator}}<header class="bar"><span class="brand">Herald console</span></header>{{/operator}}
        <main id="main">
        <h1>{{title}}</h1>
        {{{body}}}
        </main>
        </body>
        </html>
        """

    static let error = """
        <p class="error" role="alert">{{detail}}</p>
        <p><a href="/console/overview">Back to the overview</a></p>
        """

    static let signIn = """
        {{#notice}}<p class="notice" role="status">{{notice}}</p>{{/notice}}
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <form class="card sign-in" method="post" action="/console/sign-in">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <input type="hidden" name="next" value="{{next}}">
        <label for="name">Name</label>
        <input id="name" name="name" autocomplete="username" required value="{{name}}" autofocus>
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required>
        <button type="submit">Sign in</button>
        </form>
        """

    static let overview = """
        <div id="overview-figures" data-refresh="/console/overview/figures">
        {{> overview-figures}}
        </div>
        """

    static let overviewFigures = """
        <section class="cards" aria-label="Now">
        <div class="card"><span class="label">Queued</span><span class="value">{{queued}}</span></div>
        <div class="card"><span class="label">Sending</span><span class="value">{{sending}}</span></div>
        <div class="card"><span class="label">Oldest queued</span><span class="value">{{oldest}}</span></div>
        <div class="card"><span class="label">Finished, last hour</span><span class="value">{{total}}</span></div>
        <div class="card"><span class="label">Shown on the phone</span><span class="value">{{shown}}</span></div>
        <div class="card"><span class="label">Accepted → network, p50 / p99</span>
        <span class="value">{{toAccepted}}</span></div>
        <div class="card"><span class="label">Network → shown, p50 / p99</span>
        <span class="value">{{toShown}}</span></div>
        </section>
        <section aria-labelledby="by-outcome"><h2 id="by-outcome">Pushes per minute by outcome</h2>
        <div class="chart-box">{{{outcomeChart}}}</div>
        <ul class="legend">{{#outcomes}}<li><span class="swatch {{cssClass}}"></span>{{name}}</li>{{/outcomes}}</ul>
        </section>
        <section aria-labelledby="by-network"><h2 id="by-network">Pushes per minute by network</h2>
        <div class="chart-box">{{{networkChart}}}</div>
        <ul class="legend">{{#networks}}<li><span class="swatch {{cssClass}}"></span>{{name}}</li>{{/networks}}</ul>
        </section>
        <section aria-labelledby="answers"><h2 id="answers">The push networks' answers, last hour</h2>
        <table><thead><tr><th scope="col">Network</th><th scope="col">Outcome</th><th scope="col">Reason</th>
        <th scope="col" class="n">Pushes</th></tr></thead><tbody>
        {{#answers}}<tr><td>{{network}}</td><td>{{state}}</td><td>{{reason}}</td><td class="n">{{count}}</td></tr>{{/answers}}
        {{^answers}}<tr><td colspan="4">No push finished in the last hour.</td></tr>{{/answers}}
        </tbody></table>
        <p class="note">Latencies from the newest {{sampled}} finished pushes of the hour. Read at {{readAt}}.</p>
        </section>
        """
}
