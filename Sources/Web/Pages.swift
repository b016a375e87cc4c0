import FastCGI

/// Helpers every page uses: rendering inside the layout, redirects, error pages.
public enum Pages {
    /// What the layout shows around every page.
    public struct Chrome: Sendable {
        public let title: String
        public let user: UserChrome?

        public init(title: String, caller: PageCaller?) {
            self.title = title
            user = caller.map(UserChrome.init)
        }
    }

    public struct UserChrome: Sendable {
        public let displayName: String
        public let email: String
        public let role: String
        public let agency: String
        public let csrf: String
        public let isAdmin: Bool
        public let isGlobalAdmin: Bool

        init(_ caller: PageCaller) {
            displayName = caller.info.displayName.isEmpty ? caller.info.email : caller.info.displayName
            email = caller.info.email
            role = caller.info.role.label
            agency = caller.info.agency ?? ""
            csrf = caller.csrf
            isAdmin = caller.info.isAdmin
            isGlobalAdmin = caller.info.isGlobalAdmin
        }
    }

    public static func html(_ context: RequestContext, _ template: String, _ view: Any, status: Int = 200,
                            headers: [(String, String)] = []) -> HTTPResponse {
        let text = context.app.templates.render(template, view)
        return HTTPResponse(
            status: status, contentType: "text/html; charset=utf-8", text: text,
            headers: [("Cache-Control", "no-store")] + headers)
    }

    /// 303 See Other: after a form post, the browser follows with a GET.
    public static func redirect(_ location: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location), ("Cache-Control", "no-store")] + headers)
    }

    struct ErrorView {
        let chrome: Chrome
        let status: Int
        let heading: String
        let message: String
    }

    /// Errors on pages: a signed-out visitor goes to the sign-in page; others see a page
    /// that says what happened in words, never a stack trace.
    package static func error(_ error: AppError, context: RequestContext) -> HTTPResponse {
        if error.code == .unauthenticated {
            let next = context.request.method == "GET" ? "?next=" + FormData.encode(context.request.path) : ""
            return redirect("/login" + next)
        }
        let heading: String =
            switch error.code {
            case .notFound: "Not found"
            case .forbidden: "Not allowed"
            case .unavailable: "Temporarily unavailable"
            case .internal: "Something went wrong"
            default: "That did not work"
            }
        var headers: [(String, String)] = []
        if let retry = error.retryAfter { headers.append(("Retry-After", String(retry))) }
        let view = ErrorView(chrome: Chrome(title: heading, caller: nil), status: error.status, heading: heading, message: error.message)
        return html(context, "error", view, status: error.status, headers: headers)
    }
}

extension Role {
    public var label: String {
        switch self {
        case .officer: "Officer"
        case .agencyAdmin: "Agency admin"
        case .globalAdmin: "Global admin"
        }
    }
}
