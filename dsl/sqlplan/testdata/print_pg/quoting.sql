SELECT "region" AS "k0", count(*) AS "n" FROM "public"."people" WHERE ("region" IN ('north', 'south', 'east', 'west')) GROUP BY "region"
-- k0 key
-- n rows
