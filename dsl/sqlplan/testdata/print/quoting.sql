SELECT "region" AS "k0", count(*) AS "n" FROM read_parquet('/snap/people.parquet') WHERE ("region" IN ('north', 'south', 'east', 'west')) GROUP BY "region"
-- k0 key
-- n rows
