import CCurl
import Foundation
import Support

/// Hands one message to the relay through libcurl's SMTP client: STARTTLS or TLS as
/// configured (certificates checked against the system's CAs), AUTH when a user is set,
/// and one deadline for the whole exchange.
struct SMTPRelay: Sendable {
    let settings: MailSettings

    /// curl_global_init is not safe to race with other threads' first use: once, up front.
    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// nil when the relay accepted the message; otherwise why not, in libcurl's words
    /// (they name the relay and the step, never the message).
    func send(_ message: MailMessage) -> String? {
        guard Self.initialized, let curl = curl_easy_init() else { return "the mail library could not start" }
        // libcurl copies string options but keeps these pointers until it is cleaned up.
        let errors = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errors.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let recipients = curl_slist_append(nil, "<" + message.to.address + ">")
        let text = strdup(message.rendered())!
        let upload = UnsafeMutablePointer<tw_curl_upload>.allocate(capacity: 1)
        upload.initialize(to: tw_curl_upload(bytes: text, length: strlen(text), offset: 0))
        defer {
            curl_easy_cleanup(curl)
            curl_slist_free_all(recipients)
            free(text)
            upload.deallocate()
            errors.deallocate()
        }
        var codes = [
            tw_curl_set_string(curl, CURLOPT_URL, settings.url),
            tw_curl_set_string(curl, CURLOPT_MAIL_FROM, "<" + settings.from.address + ">"),
            tw_curl_set_list(curl, CURLOPT_MAIL_RCPT, recipients),
            // No signals for timeouts: they would hit the worker's other threads.
            tw_curl_set_long(curl, CURLOPT_NOSIGNAL, 1),
            tw_curl_set_long(curl, CURLOPT_TIMEOUT, settings.timeoutSeconds),
            tw_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT, settings.timeoutSeconds),
            tw_curl_set_string(curl, CURLOPT_ERRORBUFFER, errors),
            // STARTTLS must succeed when asked for: never fall back to plain text.
            tw_curl_set_long(curl, CURLOPT_USE_SSL, Int(settings.security == .starttls ? CURLUSESSL_ALL.rawValue : CURLUSESSL_NONE.rawValue)),
            tw_curl_set_upload(curl, upload),
        ]
        if !settings.user.isEmpty {
            codes.append(tw_curl_set_string(curl, CURLOPT_USERNAME, settings.user))
            codes.append(tw_curl_set_string(curl, CURLOPT_PASSWORD, settings.password))
        }
        if let refused = codes.first(where: { $0 != CURLE_OK }) {
            return "the mail library refused a setting: " + String(cString: curl_easy_strerror(refused))
        }
        let code = curl_easy_perform(curl)
        if code == CURLE_OK { return nil }
        let detail = String(cString: errors)
        return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }
}
