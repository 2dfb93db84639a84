SELECT "__pn_k0" AS "k0", count(*) AS "n", count(DISTINCT "user") AS "nu" FROM (SELECT * FROM (SELECT *, dense_rank() OVER (PARTITION BY "user" ORDER BY "__pn_first") AS "__pn_g" FROM (SELECT *, min("__pn_row") OVER (PARTITION BY "user", "__pn_k0") AS "__pn_first" FROM (SELECT *, row_number() OVER (PARTITION BY "user", "__pn_k0" ORDER BY "__pn_row") AS "__pn_r" FROM (SELECT "user", "__pn_row", "city" AS "__pn_k0" FROM "public"."people") AS "__pn_s1") AS "__pn_s2" WHERE "__pn_r" <= 1) AS "__pn_s3") AS "__pn_s4" WHERE "__pn_g" <= 4) AS "__pn_s5" GROUP BY "__pn_k0"
-- k0 key
-- n rows
-- nu units
