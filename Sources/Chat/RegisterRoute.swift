import Accounts
import FastCGI
import Web

/// `POST /api/v1/auth/register` (chat sign-up), only when TIDEWAY_REGISTRATION=on: a
/// chat-only account with no agency. Its `users` and `chatsters` documents come with it.
package enum RegisterRoute {
    package static func register(_ router: inout Router) {
        router.post("/api/v1/auth/register", registerUser)
    }

    static func registerUser(_ context: RequestContext) throws -> HTTPResponse {
        guard context.app.config.registration else { throw AppError.notFound("sign-up is not enabled on this server") }
        let body = try context.jsonObject(allowing: ["email", "password", "displayName", "device"])
        guard let email = body["email"]?.stringValue, email.contains("@"), email.utf8.count <= 254,
              let password = body["password"]?.stringValue,
              let displayName = body["displayName"]?.stringValue
        else { throw AppError.badRequest("email, password and displayName are required strings") }
        guard password.count >= 8 else { throw AppError.invalid("a password has at least 8 characters", path: "/password") }
        guard (1...100).contains(displayName.count) else { throw AppError.invalid("displayName: 1–100 characters", path: "/displayName") }
        let user = Accounts.NewUser(email: email, password: password, firstName: "", lastName: "",
                                    displayName: displayName, agency: nil, role: .officer)
        do {
            try context.app.database.withConnection { connection in
                try connection.transaction { tx in _ = try Accounts.createSelfRegistered(user, in: tx) }
            }
        } catch let error as AppError where error.code == .conflict {
            throw AppError(.conflict, "that email is already registered")
        }
        var response = try AuthRoutes.login(context, email: email, password: password, device: body["device"]?.stringValue ?? "")
        response.status = 201
        return response
    }
}
