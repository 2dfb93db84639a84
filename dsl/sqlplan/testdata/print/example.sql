SELECT "region" AS "k0", "sex" AS "k1", count(*) AS "n", count(CAST("income" AS DOUBLE)) AS "a1_n", coalesce(sum(CASE WHEN CASE WHEN CAST("income" AS DOUBLE) IS NOT NULL THEN least(greatest(CAST("income" AS DOUBLE), CAST(0 AS DOUBLE)), CAST(100000 AS DOUBLE)) END IS NOT NULL THEN least(greatest(CAST(round((CASE WHEN CAST("income" AS DOUBLE) IS NOT NULL THEN least(greatest(CAST("income" AS DOUBLE), CAST(0 AS DOUBLE)), CAST(100000 AS DOUBLE)) END - CAST(50000 AS DOUBLE)) * CAST(4.294967296e+09 AS DOUBLE)) AS BIGINT), CAST(-214748364800000 AS BIGINT)), CAST(214748364800000 AS BIGINT)) END), 0) AS "a1_sum" FROM read_parquet('/snap/people.parquet') WHERE ((CAST("age" AS DOUBLE) BETWEEN CAST(30 AS DOUBLE) AND CAST(64 AS DOUBLE)) OR ("region" IN ('north', 'east'))) AND list_contains(['north', 'south', 'east', 'west'], "region") AND list_contains(['f', 'm'], "sex") GROUP BY "region", "sex"
-- k0 key
-- k1 key
-- n rows
-- a1_n count
-- a1_sum sum
