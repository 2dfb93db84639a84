SELECT "region" AS "k0", "sex" AS "k1", count(*) AS "n", count(CAST("income" AS DOUBLE)) AS "a1_n", coalesce(sum(CAST((CASE WHEN CAST("income" AS DOUBLE) < CAST('0' AS DOUBLE) THEN CAST('0' AS DOUBLE) WHEN CAST("income" AS DOUBLE) > CAST('100000' AS DOUBLE) THEN CAST('100000' AS DOUBLE) ELSE CAST("income" AS DOUBLE) END - CAST('50000' AS DOUBLE)) * CAST('4.294967296e+09' AS DOUBLE) AS BIGINT)), 0) AS "a1_sum" FROM read_parquet('/snap/people.parquet') WHERE ((CAST("age" AS DOUBLE) BETWEEN CAST('30' AS DOUBLE) AND CAST('64' AS DOUBLE)) OR ("region" IN ('north', 'east'))) AND list_contains(['north', 'south', 'east', 'west'], "region") AND list_contains(['f', 'm'], "sex") GROUP BY "region", "sex"
-- k0 key
-- k1 key
-- n rows
-- a1_n count
-- a1_sum sum
