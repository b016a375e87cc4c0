import FastCGI
import Foundation
import Support
import Web

// The worker only wires things: configuration, the socket, the application, the threads.
// Before any thread starts: SIGTERM must reach only the server's drain (FastCGIServer.run).
FastCGIServer.blockStopSignals()
FastCGIServer.limitAllocatorArenas()
let config = Config()
do {
    let listenFD = try Listener.open(environment: ProcessInfo.processInfo.environment)
    let app = try Capabilities.start(config: config)
    Log.info("worker \(getpid()) serving with \(config.threads) threads")
    FastCGIServer(listenFD: listenFD, threads: config.threads).run { { request in app.handle(request) } }
    Log.info("worker \(getpid()) stopped")
} catch {
    Log.error("worker cannot start: \(error)")
    exit(1)
}
