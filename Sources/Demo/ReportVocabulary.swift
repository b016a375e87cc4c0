/// Word pools for generated reports. The menu lists give the agency's own choices
/// (species, gear, violation codes); these pools fill the free-text fields that
/// officers type, in the languages spoken where each flag's vessels come from.
enum ReportVocabulary {
    static func isSpanishSpeaking(_ flag: String) -> Bool { ["EC", "PA", "CO", "PE", "CR", "NI", "ES"].contains(flag) }
    static func isEastAsian(_ flag: String) -> Bool { ["CN", "TW", "KR"].contains(flag) }

    static func vesselName(flag: String, random: inout DemoRandom) -> String {
        if isEastAsian(flag) {
            let prefixes = flag == "KR" ? ["Oyang", "Dong Won", "Sajo", "Ho Sung"] : ["Fu Yuan Yu", "Lu Rong Yu", "Zhe Dai Yu", "Hai Feng", "Jin Hai", "Xin Shi Ji"]
            return "\(random.pick(prefixes)) \(random.int(in: 1...999))"
        }
        if isSpanishSpeaking(flag) {
            return random.pick([
                "Santa María", "San José", "Don Lucho", "Doña Rosa", "Estrella del Mar", "Mi Esperanza", "Virgen del Carmen",
                "Gaviota", "El Delfín", "Niña Jessica", "Lobo de Mar", "Don Manuel", "Cristo Rey", "Marlin Azul",
                "Pacífico Sur", "Rey David", "Fragata", "Costa Brava", "Sirena", "Tiburón", "Don Beto", "Albatros",
            ])
        }
        return random.pick([
            "Étoile d'Afrique", "Océan Bleu", "Bonne Pêche", "Belle Île", "Marie-Claire", "Cap Estérias", "Nyanga",
            "Ogooué", "Mandji", "Espoir", "Mayumba", "Pointe Denis", "Atlantic Pride", "Ocean Hunter", "Sea Breeze",
        ])
    }

    static func personName(flag: String, random: inout DemoRandom) -> String {
        if isEastAsian(flag) {
            let family = flag == "KR" ? ["Kim", "Lee", "Park", "Choi", "Jung"] : ["Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Huang", "Zhao"]
            let given = flag == "KR" ? ["Min-jun", "Seo-yeon", "Ji-ho", "Hyun-woo"] : ["Wei", "Lei", "Jun", "Hao", "Ming", "Qiang", "Tao"]
            return "\(random.pick(family)) \(random.pick(given))"
        }
        if isSpanishSpeaking(flag) {
            let first = ["José", "Luis", "Carlos", "Miguel", "Jorge", "Pedro", "Juan Carlos", "Ángel", "Wilson", "Fernando", "Rosa", "Byron"]
            let last = ["Mendoza", "Vera", "Zambrano", "Macías", "Cedeño", "Castro", "Quiñónez", "Pincay", "Loor", "Herrera", "Solís", "Rojas"]
            return "\(random.pick(first)) \(random.pick(last))"
        }
        let first = ["Jean", "Paul", "Serge", "Patrick", "Moussa", "Ibrahima", "Alain", "Rodrigue", "Cheikh", "Yves", "Aline"]
        let last = ["Mba", "Nzé", "Ondo", "Diallo", "Ndiaye", "Mouketou", "Ella", "Boussougou", "Sarr", "Koumba", "Martin"]
        return "\(random.pick(first)) \(random.pick(last))"
    }

    static let emsDescriptions: [String: [String]] = [
        "Automatic Identification System (AIS)": ["Class A AIS transponder", "Class B AIS transponder", "AIS transponder, switched off on approach"],
        "Visible Infrared Radiometer Suite (VIRS)": ["Light signature detected by VIIRS", "VIIRS night-light detection"],
    ]
    static let otherEMSDescriptions = ["Satellite VMS unit", "Onboard camera system", "Electronic logbook"]

    static let buyers = [
        "Pesquera Santa Rosa S.A.", "Frigorífico del Pacífico", "Exportadora Marítima Manta", "Mariscos Don Goyo",
        "Atlantic Seafood Ltd", "Société Gabonaise de Pêche", "Pacific Tuna Traders", "Comercial Puerto Ayora",
    ]

    static let notes = [
        "Vessel cooperative, crew mustered on deck.", "Logbook not up to date; last entry three days ago.",
        "Fish hold inspected; ice and catch consistent with the logbook.", "AIS was switched off on approach.",
        "Captain showed a copy of the permit; the original is kept at the home port.",
        "Sea state 4, boarding delayed by 20 minutes.", "Undersized specimens found in the hold.",
        "Crew list does not match the permit.",
        "Shark fins found separated from carcasses.", "Nets measured; mesh size within limits.",
    ]

    static let amberReasons = [
        "Life jackets missing for part of the crew", "Fire extinguisher expired", "No working VHF radio",
        "Deck overloaded with gear", "Liferaft past its service date", "Bilge pump not working",
    ]

    static func seizure(species: String, random: inout DemoRandom) -> String {
        switch random.below(4) {
        case 0: return "\(random.int(in: 20...900)) kg of \(species.lowercased()) seized"
        case 1: return "Gill net (\(random.int(in: 2...12) * 100) m) seized"
        case 2: return "Longline with \(random.int(in: 3...40) * 50) hooks seized"
        default: return "Shark fins (\(random.int(in: 5...120)) kg) seized"
        }
    }
}
