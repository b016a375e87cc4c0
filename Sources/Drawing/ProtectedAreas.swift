import Database

/// The protected areas (`mpas` documents) of a partition as map areas, read under the
/// caller's row-level security by whoever draws a map of that partition.
extension MapArea {
    /// A protected area's ring, as "lon lat,lon lat,...", read by `protectedAreas(_:)`.
    package static func protectedAreasQuery(partition: SQL) -> SQL {
        """
        select m.doc ->> 'name' as name,
               (select string_agg((c ->> 0) || ' ' || (c ->> 1), ',' order by o)
                  from jsonb_array_elements(case when jsonb_typeof(m.doc -> 'coordinates') = 'array'
                                                 then m.doc -> 'coordinates' else '[]' end) with ordinality e(c, o)
                 where jsonb_typeof(c -> 0) = 'number' and jsonb_typeof(c -> 1) = 'number') as ring
          from sync.mpas m where \(partition) and not m.deleted order by m.id
        """
    }

    package static func protectedAreas(_ rows: [Row]) -> [MapArea] {
        rows.compactMap { row in
            let ring = (row["ring"] ?? "").split(separator: ",").compactMap { pair -> (lon: Double, lat: Double)? in
                let xy = pair.split(separator: " ")
                guard xy.count == 2, let lon = Double(xy[0]), let lat = Double(xy[1]) else { return nil }
                return (lon, lat)
            }
            return ring.count >= 3 ? MapArea(name: row["name"] ?? "Protected area", ring: ring) : nil
        }
    }
}
