import HeraldConsoleCore
import HeraldRelay
import HeraldRelayHTTP
import Hummingbird

extension Console {
    struct SignInForm: Decodable {
        var name: String
        var password: String
        var csrf: String
        var next: String?
    }

    struct SignInView {
        var csrf: String
        var next: String
        var name: String = ""
        var error: String?
        var notice: String?
    }

    /// The sign-in form's token is keyed by a cookie of its own (there is no session yet): a
    /// page of another site can neither read the cookie nor compute the token.
    func addSignIn(to group: RouterGroup<RelayRequestContext>) {
        group.get("sign-in") { request, _ -> Response in
            if (try? await sessions.signedIn(request)) != nil { return ConsoleHTTP.redirect("/console/overview") }
            let next = ConsoleHTTP.localPath(request.uri.queryParameters.get("next"))
            let notice = request.uri.queryParameters.get("signed-out") != nil ? "You are signed out." : nil
            return signInPage(request, SignInView(csrf: "", next: next, notice: notice), status: .ok)
        }
        group.post("sign-in") { request, context -> Response in
            if ConsoleHTTP.isCrossSite(request) { return error(.crossSite, nil) }
            let form: SignInForm
            do {
                form = try await ConsoleHTTP.form(SignInForm.self, request, limit: configuration.maximumFormBytes)
            } catch {
                return failure(error, nil)
            }
            let next = ConsoleHTTP.localPath(form.next)
            guard let value = request.cookies[ConsoleCookie.signIn]?.value,
                let key = ConsoleToken(cookieValue: value), key.accepts(form.csrf, for: .signIn)
            else {
                // The form is older than its cookie (or not this console's): a new form, no error.
                var view = SignInView(csrf: "", next: next, name: form.name)
                view.error = "The form expired; sign in again."
                return signInPage(request, view, status: .forbidden)
            }
            let address = ConsoleHTTP.address(context.channel)
            do {
                switch try await sessions.signIn(name: form.name, password: form.password, address: address) {
                case .signedIn(let token, let account):
                    await relay.keys.audit(
                        actor: "operator:" + account.name,
                        action: "console.signed_in",
                        target: account.name,
                        app: nil
                    )
                    let secure = ConsoleHTTP.isSecure(request, configured: configuration.secureCookies)
                    let cookie = ConsoleCookie(
                        name: ConsoleCookie.session,
                        value: token.cookieValue,
                        maxAge: configuration.sessionLifetime.milliseconds / 1000,
                        secure: secure
                    )
                    return ConsoleHTTP.redirect(
                        next,
                        cookies: [cookie, .deleting(ConsoleCookie.signIn, secure: secure)]
                    )
                case .refused:
                    await relay.keys.audit(
                        actor: "console",
                        action: "console.sign_in_refused",
                        target: String(form.name.prefix(64)),
                        app: nil
                    )
                    var view = SignInView(csrf: "", next: next, name: form.name)
                    view.error = "The name or the password is wrong."
                    return signInPage(request, view, status: .unauthorized)
                case .throttled(let wait):
                    let seconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
                    var view = SignInView(csrf: "", next: next, name: form.name)
                    view.error = "Too many failed sign-ins. Try again in \(seconds) s."
                    var response = signInPage(request, view, status: .tooManyRequests)
                    response.headers[.retryAfter] = "\(seconds)"
                    return response
                }
            } catch {
                return failure(error, nil)
            }
        }
        form(group, "sign-out", .view) { request, _, signedIn in
            struct SignOutForm: Decodable { var csrf: String }
            let form = try await ConsoleHTTP.form(SignOutForm.self, request, limit: configuration.maximumFormBytes)
            try check(form.csrf, signedIn)
            try await sessions.signOut(signedIn)
            await relay.keys.audit(actor: signedIn.actor, action: "console.signed_out", target: signedIn.name, app: nil)
            let secure = ConsoleHTTP.isSecure(request, configured: configuration.secureCookies)
            return ConsoleHTTP.redirect(
                "/console/sign-in?signed-out=1",
                cookies: [.deleting(ConsoleCookie.session, secure: secure)]
            )
        }
    }

    /// The sign-in page with a new sign-in cookie and the token it keys.
    private func signInPage(_ request: Request, _ view: SignInView, status: HTTPResponse.Status) -> Response {
        let key = ConsoleToken.random()
        var view = view
        view.csrf = key.formToken(.signIn)
        let cookie = ConsoleCookie(
            name: ConsoleCookie.signIn,
            value: key.cookieValue,
            maxAge: 3600,
            secure: ConsoleHTTP.isSecure(request, configured: configuration.secureCookies)
        )
        return render("Sign in", "sign-in", view, nil, current: nil, status: status, cookies: [cookie])
    }

    /// An error page for a refusal thrown before a session is known.
    func failure(_ error: any Error, _ signedIn: SignedIn?) -> Response {
        self.error(ConsoleError.from(error), signedIn)
    }
}
