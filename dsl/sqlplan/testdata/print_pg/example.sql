SELECT "region" AS "k0", "sex" AS "k1", count(*) AS "n", count(CAST("income" AS double precision)) AS "a1_n", coalesce(sum(CAST((CASE WHEN CAST("income" AS double precision) IS NOT NULL THEN least(greatest(CAST("income" AS double precision), CAST('0' AS double precision)), CAST('100000' AS double precision)) END - CAST('50000' AS double precision)) * CAST('4.294967296e+09' AS double precision) AS bigint)), 0) AS "a1_sum" FROM "public"."people" WHERE ((CAST("age" AS double precision) BETWEEN CAST('30' AS double precision) AND CAST('64' AS double precision)) OR ("region" IN ('north', 'east'))) AND CASE WHEN ("region") IS NULL THEN NULL ELSE ("region") IN ('north', 'south', 'east', 'west') END AND CASE WHEN ("sex") IS NULL THEN NULL ELSE ("sex") IN ('f', 'm') END GROUP BY "region", "sex"
-- k0 key
-- k1 key
-- n rows
-- a1_n count
-- a1_sum sum
