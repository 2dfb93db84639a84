SELECT floor((CAST("age" AS DOUBLE) / CAST(10 AS DOUBLE))) AS "k0", CASE WHEN ("city" = 'it''s') THEN 'q' ELSE NULL END AS "k1", count(*) AS "n", coalesce(sum(CASE WHEN CASE WHEN (CAST("income" AS DOUBLE) + CAST(1 AS DOUBLE)) > 0 THEN ln((CAST("income" AS DOUBLE) + CAST(1 AS DOUBLE))) END IS NOT NULL THEN least(greatest(CASE WHEN (CAST("income" AS DOUBLE) + CAST(1 AS DOUBLE)) > 0 THEN ln((CAST("income" AS DOUBLE) + CAST(1 AS DOUBLE))) END, CAST(0 AS DOUBLE)), CAST(20 AS DOUBLE)) END), CAST(0 AS DOUBLE)) AS "a0_sum" FROM read_parquet('/snap/people.parquet') WHERE ((NOT ("city" IS NULL)) AND (TRY_CAST("city" AS DOUBLE) <> CAST(-3 AS DOUBLE)) AND (round(round(CAST("hours" AS DOUBLE)), 2) >= date_part('year', "born")) AND (coalesce(CAST("hours" AS DOUBLE), CAST(0 AS DOUBLE)) NOT IN (CAST(1 AS DOUBLE), CAST(2 AS DOUBLE)))) GROUP BY floor((CAST("age" AS DOUBLE) / CAST(10 AS DOUBLE))), CASE WHEN ("city" = 'it''s') THEN 'q' ELSE NULL END
-- k0 key
-- k1 key
-- n rows
-- a0_sum sum
