SELECT "region" AS "k0", count(*) AS "n" FROM "public"."people" WHERE CASE WHEN ("region") IS NULL THEN NULL ELSE ("region") IN ('north', 'south', 'east', 'west') END GROUP BY "region"
-- k0 key
-- n rows
