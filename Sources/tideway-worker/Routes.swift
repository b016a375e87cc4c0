import Accounts
import Administration
import Blobs
import Boardings
import Chat
import Dashboards
import Events
import Foundation
import Mail
import Support
import Sync
import Teams
import Web

/// Every capability of the product and what each keeps for the process's life: the one
/// place that knows them all. A new capability is a target plus one line here.
struct Capabilities {
    let sync: SyncService
    let mailer: Mailer?

    init(config: Config) throws {
        // The SMTP relay for account links (TIDEWAY_SMTP_*); none: admins hand links over.
        let mail = MailSettings(environment: ProcessInfo.processInfo.environment, publicURL: config.publicURL)
        if let problem = mail?.problem { throw AppError(.internal, "mail settings: \(problem)") }
        sync = SyncService(config: config)
        mailer = mail.map(Mailer.init(settings:))
    }

    func routes(_ router: inout Router) {
        HealthRoutes.register(&router)
        AuthRoutes.register(&router)
        MeRoute.register(&router)
        SyncRoutes.register(&router, service: sync)
        RegisterRoute.register(&router)
        EventRoutes.register(&router)
        BlobRoutes.register(&router, sync: sync)
        LoginPages.register(&router)
        HomePage.register(&router)
        BoardingRoutes.register(&router)
        AdminRoutes.register(&router, mailer: mailer)
        DashboardPages.register(&router)
        TeamRoutes.register(&router)
    }

    /// The application with every route, its background threads started.
    static func start(config: Config, waitForDatabase: Double = 60) throws -> App {
        let capabilities = try Capabilities(config: config)
        let app = try App.start(config: config, waitForDatabase: waitForDatabase, routes: capabilities.routes)
        capabilities.sync.start(conninfo: config.database, pool: app.database)
        return app
    }
}
