extension ConsoleTemplates {
    static let pushRows = """
        {{#pushes}}<tr data-push="{{pushID}}"><td><time>{{at}}</time></td><td>{{app}}</td>
        <td>{{#user}}<a href="/console/users/{{user}}">{{user}}</a>{{/user}}</td><td>{{kind}}</td><td>{{network}}</td>
        <td><span class="state {{state}}">{{state}}</span></td><td>{{stage}}</td>
        <td><a href="/console/pushes/{{pushID}}">{{pushID}}</a></td></tr>{{/pushes}}
        """

    static let pushTableHead = """
        <thead><tr><th scope="col">Time (UTC)</th><th scope="col">App</th><th scope="col">User</th>
        <th scope="col">Kind</th><th scope="col">Network</th><th scope="col">State</th><th scope="col">Phone</th>
        <th scope="col">Push</th></tr></thead>
        """

    static let live = """
        <p class="note" id="live-status" role="status">The pushes accepted in the last minutes, newest first.
        With JavaScript on, new pushes and their changes appear as they happen.</p>
        <table class="pushes" id="live" data-stream="/console/live/events">
        {{> push-table-head}}
        <tbody>
        {{> push-rows}}
        </tbody></table>
        """

    static let search = """
        <form class="search" method="get" action="/console/search" role="search">
        <label for="q">User, device, push, message, call, callback or conversation id</label>
        <input id="q" name="q" value="{{query}}" required>
        <button type="submit">Search</button>
        </form>
        {{#searched}}
        {{#users}}<p>User <a href="/console/users/{{.}}">{{.}}</a></p>{{/users}}
        {{#calls}}<p>Call <a href="/console/calls/{{.}}">{{.}}</a></p>{{/calls}}
        {{#conversation}}<p>Conversation {{conversation}} of user <a href="/console/users/{{user}}">{{user}}</a></p>
        {{/conversation}}
        <h2>Pushes</h2>
        <table class="pushes">
        {{> push-table-head}}
        <tbody>
        {{> push-rows}}
        {{^pushes}}<tr><td colspan="8">No push matches {{query}}.</td></tr>{{/pushes}}
        </tbody></table>
        {{/searched}}
        """

    static let push = """
        <dl class="facts">
        <dt>Push</dt><dd>{{pushID}}</dd>
        <dt>Device</dt><dd>{{deviceID}}{{#user}} of user <a href="/console/users/{{user}}">{{user}}</a>{{/user}}</dd>
        <dt>Kind</dt><dd>{{kind}}</dd>
        <dt>State</dt><dd><span class="state {{state}}">{{state}}</span>{{#reason}} ({{reason}}){{/reason}}</dd>
        {{#explanation}}<dt>What it means</dt><dd>{{explanation}}</dd>{{/explanation}}
        <dt>Subject</dt><dd>{{subject}}</dd>
        <dt>Expires</dt><dd><time>{{expiresAt}}</time></dd>
        </dl>
        <h2>Its road</h2>
        <ol class="road">
        {{#steps}}<li class="{{tone}}"><time>{{at}}</time> <span class="actor">{{actor}}</span>
        <span class="what">{{title}}</span>{{#detail}}<span class="detail">{{detail}}</span>{{/detail}}</li>{{/steps}}
        </ol>
        {{#sandboxed}}
        <h2>In the sandbox</h2>
        <p class="note">What the sandbox's push network received for this push, and what its emulated device did.</p>
        <ol class="road">
        {{#sandbox}}<li class="info"><time>{{at}}</time> <span class="actor">{{network}}</span>
        <span class="what">answered {{status}}{{#reason}} {{reason}}{{/reason}}</span>
        <span class="detail">{{facts}}</span>{{#device}}<span class="detail">device: {{device}}</span>{{/device}}</li>
        {{/sandbox}}
        {{^sandbox}}<li class="info">Nothing received for this push (yet).</li>{{/sandbox}}
        </ol>
        {{/sandboxed}}
        """

    static let user = """
        <table class="devices"><thead><tr><th scope="col">Device</th><th scope="col">App</th>
        <th scope="col">Platform</th><th scope="col">Tokens</th><th scope="col">APNs</th><th scope="col">Key</th>
        <th scope="col">Presence</th><th scope="col">Live channel</th><th scope="col">Last receipt</th>
        <th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead><tbody>
        {{#devices}}<tr><td>{{deviceID}}</td><td>{{app}}</td><td>{{platform}}</td>
        <td>{{tokens}}<br><span class="detail">changed {{tokenAge}} ago</span></td><td>{{environment}}</td>
        <td>{{keyID}}<br><span class="detail">activated {{activatedAt}}</span></td><td>{{presence}}</td><td>{{live}}</td>
        <td>{{lastReceipt}}</td>
        <td>{{#mayDeactivate}}<a class="button danger" href="/console/devices/{{deviceID}}/deactivate">Deactivate</a>
        {{/mayDeactivate}}</td></tr>{{/devices}}
        {{^devices}}<tr><td colspan="10">The relay has no device of this user.</td></tr>{{/devices}}
        </tbody></table>
        <p><a href="/console/search?q={{userID}}">This user's pushes</a></p>
        """

    static let deactivate = """
        <p>Deactivating device <strong>{{deviceID}}</strong> ({{app}}, {{platform}}) of user {{user}} deletes its
        tokens, keys and credential. Its pushes stop; the app must activate again to get any.</p>
        <form method="post" action="/console/devices/{{deviceID}}/deactivate">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="danger">Deactivate the device</button>
        <a href="/console/users/{{user}}">Cancel</a>
        </form>
        """

    static let calls = """
        <form class="search" method="get" action="/console/calls" role="search">
        <label for="call">Call id</label><input id="call" name="id" required>
        <button type="submit">Open</button></form>
        <h2>Ringing now</h2>
        <table><thead><tr><th scope="col">Call</th><th scope="col">User</th><th scope="col">App</th>
        <th scope="col">Since</th><th scope="col">Until</th></tr></thead><tbody>
        {{#calls}}<tr><td><a href="/console/calls/{{callID}}">{{callID}}</a></td><td>{{user}}</td><td>{{app}}</td>
        <td><time>{{createdAt}}</time></td><td><time>{{expiresAt}}</time></td></tr>{{/calls}}
        {{^calls}}<tr><td colspan="5">No call is ringing.</td></tr>{{/calls}}
        </tbody></table>
        """

    static let call = """
        <dl class="facts"><dt>Call</dt><dd>{{callID}}</dd>
        <dt>User</dt><dd><a href="/console/users/{{user}}">{{user}}</a></dd><dt>App</dt><dd>{{app}}</dd>
        <dt>State</dt><dd><span class="state {{state}}">{{state}}</span>{{#reason}} ({{reason}}){{/reason}}</dd>
        <dt>Media</dt><dd>{{media}}</dd><dt>Started</dt><dd><time>{{createdAt}}</time></dd>
        {{#endedAt}}<dt>Ended</dt><dd><time>{{endedAt}}</time></dd>{{/endedAt}}</dl>
        <h2>Its devices</h2>
        <table><thead><tr><th scope="col">Device</th><th scope="col">Report</th><th scope="col">At</th></tr></thead>
        <tbody>{{#devices}}<tr><td>{{deviceID}}</td><td>{{report}}</td><td><time>{{at}}</time></td></tr>{{/devices}}
        </tbody></table>
        <p><a href="/console/search?q={{callID}}">The call's pushes</a></p>
        """

    static let callbacks = """
        <table><thead><tr><th scope="col">Callback</th><th scope="col">User</th><th scope="col">App</th>
        <th scope="col">State</th><th scope="col">Due</th><th scope="col">Expires</th><th scope="col">Pushes</th>
        </tr></thead><tbody>
        {{#callbacks}}<tr><td><a href="/console/search?q={{id}}">{{id}}</a></td>
        <td><a href="/console/users/{{user}}">{{user}}</a></td><td>{{app}}</td><td>{{state}}</td>
        <td><time>{{dueAt}}</time></td><td><time>{{expiresAt}}</time></td><td class="n">{{pushes}}</td></tr>{{/callbacks}}
        {{^callbacks}}<tr><td colspan="7">No callback is pending.</td></tr>{{/callbacks}}
        </tbody></table>
        """

    static let simulations = """
        {{^available}}<p class="note">This node plays no simulations.</p>{{/available}}
        <ul class="flows">
        {{#flows}}<li class="card"><h2>{{name}}</h2><p>{{summary}}</p>
        {{#mayStart}}<form method="post" action="/console/simulations">
        <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="flow" value="{{name}}">
        <button type="submit">Start {{name}}</button></form>{{/mayStart}}</li>{{/flows}}
        </ul>
        <h2>Runs</h2>
        <table><thead><tr><th scope="col">Run</th><th scope="col">Flow</th><th scope="col">By</th>
        <th scope="col">State</th><th scope="col">Steps</th></tr></thead><tbody>
        {{#runs}}<tr><td><a href="/console/simulations/{{id}}">{{id}}</a></td><td>{{flow}}</td><td>{{by}}</td>
        <td>{{state}}</td><td class="n">{{steps}}</td></tr>{{/runs}}
        {{^runs}}<tr><td colspan="5">None yet.</td></tr>{{/runs}}
        </tbody></table>
        """

    static let simulation = """
        <p role="status">{{flow}}: <span id="run-state" class="state {{state}}" data-state="{{state}}">{{state}}</span>,
        <span id="run-line">{{line}}</span></p>
        <div id="diagram" class="diagram" data-stream="/console/simulations/{{id}}/events">{{{diagram}}}</div>
        """

    static let audit = """
        <table><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Who</th><th scope="col">What</th>
        <th scope="col">Target</th><th scope="col">App</th></tr></thead><tbody>
        {{#entries}}<tr><td><time>{{at}}</time></td><td>{{actor}}</td><td>{{action}}</td><td>{{target}}</td>
        <td>{{app}}</td></tr>{{/entries}}
        </tbody></table>
        {{#next}}<p><a href="/console/audit?before={{next}}">Older entries</a></p>{{/next}}
        """
}
