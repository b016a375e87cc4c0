/// A complete, valid boarding report using every block of the Report tree (domain.md).
let validReportText = #"""
{
  "_id": "64b7f0c2a1e4d3b2c1a09f01",
  "draft": false,
  "timestamp": "2024-03-01T10:00:00Z",
  "date": "2024-03-01T09:12:30.123+03:00",
  "location": [39.2083, -6.7924],
  "reportingOfficer": {"name": {"first": "Neema", "last": "Mushi"}, "email": "neema.mushi@example.org"},
  "vessel": {
    "name": "Amani", "homePort": "Dar es Salaam", "nationality": "TZ", "permitNumber": "TZ-DSM-0042",
    "ems": [{"emsType": "Automatic Identification System (AIS)", "emsDescription": "Class B transponder",
             "registryNumber": "MMSI 677000123", "attachments": {"notes": ["switched off on arrival"], "photoIDs": []}}],
    "lastDelivery": {"date": "2024-02-20T16:00:00+03:00", "location": "Dar es Salaam", "business": "Ferry Fish Market",
                     "attachments": {"notes": [], "photoIDs": ["ph-01"]}},
    "attachments": {"notes": ["hull number repainted"], "photoIDs": ["ph-02", "ph-03"]}
  },
  "captain": {"name": "Juma Ali", "license": "CAP-1189", "attachments": {"notes": [], "photoIDs": ["ph-04"]}},
  "crew": [
    {"name": "Said Omar", "license": "CR-2201"},
    {"name": "Hassan Mbwana", "license": ""},
    {"name": "Rashidi Kombo", "license": "CR-2207", "attachments": {"notes": ["no ID card"]}}
  ],
  "notes": [{"note": "Crew cooperative.", "photoIDs": []}],
  "inspection": {
    "activity": {"name": "Fishing", "attachments": {"notes": [], "photoIDs": []}},
    "fishery": {"name": "Tuna"},
    "gearType": {"name": "Long-line"},
    "actualCatch": [
      {"fish": "Tuna", "number": 14, "weight": 212.5, "unit": "kg"},
      {"fish": "Swordfish", "number": 2, "weight": 61, "unit": "kg", "attachments": {"photoIDs": ["ph-05"]}}
    ],
    "summary": {
      "safetyLevel": {"level": "Amber", "amberReason": "life jackets missing for two crew"},
      "violations": [
        {"disposition": "Citation", "offence": {"code": "T-14 189(a)", "explanation": "Take in violation of Federal Regulations"},
         "crewMember": {"name": "Juma Ali", "license": "CAP-1189"}, "attachments": {"notes": ["fine issued"]}},
        {"disposition": "", "offence": {"code": "T-14 27.80(a)(2)", "explanation": "Use barbed hooks for Salmon"}}
      ],
      "seizures": {"text": "40 m of illegal net", "attachments": {"photoIDs": ["ph-06"]}}
    },
    "attachments": {"notes": [], "photoIDs": []}
  }
}
"""#
