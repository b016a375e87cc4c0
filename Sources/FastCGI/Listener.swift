import CFastCGI
import Foundation

/// Where the worker's FastCGI socket comes from: systemd socket activation (`LISTEN_FDS`,
/// first descriptor 3) or a unix socket path the worker opens itself.
public enum Listener {
    public enum Failure: Error, CustomStringConvertible {
        case noSocket, openFailed(String)
        public var description: String {
            switch self {
            case .noSocket: "no socket: set TIDEWAY_SOCKET or start under systemd socket activation"
            case .openFailed(let path): "cannot listen on \(path)"
            }
        }
    }

    /// `backlog`: bursts of requests (thousands of devices reconnecting their event streams at once,
    /// or closing them, each with nchan's unsubscribe hook) wait in the kernel rather than being
    /// refused. 1024 overflowed in the events benchmark; the kernel caps it at net.core.somaxconn
    /// (4096 by default since Linux 5.4).
    /// The socket path the worker binds itself (and unlinks when it stops); nil under
    /// socket activation, where the socket is systemd's.
    public static func ownedPath(environment: [String: String]) -> String? {
        if let fds = environment["LISTEN_FDS"], Int(fds) ?? 0 >= 1 { return nil }
        return environment["TIDEWAY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public static func open(environment: [String: String], backlog: Int32 = 4096) throws -> Int32 {
        if let fds = environment["LISTEN_FDS"], Int(fds) ?? 0 >= 1 {
            // LISTEN_PID names the process the sockets are for; a child started by us must not take them.
            if let pid = environment["LISTEN_PID"], Int32(pid) != getpid() { throw Failure.noSocket }
            return 3
        }
        guard let path = environment["TIDEWAY_SOCKET"], !path.isEmpty else { throw Failure.noSocket }
        unlink(path)
        let fd = FCGX_OpenSocket(path, backlog)
        guard fd >= 0 else { throw Failure.openFailed(path) }
        // nginx connects as another user in production; the socket's folder guards access.
        chmod(path, 0o660)
        return fd
    }
}
