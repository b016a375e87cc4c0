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
    let environment = ProcessInfo.processInfo.environment
    let listenFD = try Listener.open(environment: environment)
    Metrics.startProcess(role: "worker", config: config)
    let app = try Capabilities.start(config: config)
    Log.info("worker \(getpid()) serving with \(config.threads) threads")
    FastCGIServer(listenFD: listenFD, threads: config.threads, ownedPath: Listener.ownedPath(environment: environment)).run { { request in app.handle(request) } }
    Log.info("worker \(getpid()) stopped")
} catch {
    Log.error("worker cannot start: \(error)")
    exit(1)
}
