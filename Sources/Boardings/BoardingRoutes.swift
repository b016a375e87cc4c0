import Web

/// The back office's boarding report pages (issue 6). `/boardings/map` and `/boardings/new` come before
/// `/boardings/:id` so that they are not taken for ids.
package enum BoardingRoutes {
    package static func register(_ router: inout Router) {
        router.get("/boardings", BoardingListPage.show)
        router.get("/boardings.csv", BoardingExport.csv)
        router.get("/boardings.geojson", BoardingExport.geojson)
        router.get("/boardings/map", BoardingMapPage.show)
        router.get("/boardings/new", BoardingEditPage.newForm)
        router.post("/boardings/new", BoardingEditPage.saveNew)
        router.get("/boardings/:id", BoardingPage.show)
        router.get("/boardings/:id/print", BoardingPage.print)
        router.get("/boardings/:id/edit", BoardingEditPage.editForm)
        router.post("/boardings/:id/edit", BoardingEditPage.saveEdit)
    }
}
