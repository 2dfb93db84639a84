SELECT "region" AS "k0", count(*) AS "n" FROM read_parquet('/snap/people.parquet') GROUP BY "region"
-- k0 key
-- n rows
