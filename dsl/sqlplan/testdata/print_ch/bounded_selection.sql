SELECT "__pn_k0" AS "k0", count(*) AS "n", count(DISTINCT "user") AS "nu" FROM (SELECT "user", "__pn_k0" FROM (SELECT "user", tupleElement("__pn_g", 2) AS "__pn_k0", arrayJoin(tupleElement("__pn_g", 3)) AS "__pn_r" FROM (SELECT "user", arrayJoin(arraySlice(arraySort(groupArray(tuple("__pn_first", "__pn_k0", "__pn_rs"))), 1, 4)) AS "__pn_g" FROM (SELECT "user", "__pn_k0", min("__pn_row") AS "__pn_first", arraySlice(arraySort(groupArray(tuple("__pn_row"))), 1, 1) AS "__pn_rs" FROM (SELECT "user", "__pn_row", "city" AS "__pn_k0" FROM "db"."people") GROUP BY "user", "__pn_k0") GROUP BY "user"))) GROUP BY "__pn_k0"
-- k0 key
-- n rows
-- nu units
