SELECT "region" AS "k0", count(*) AS "n" FROM read_parquet('/snap/people.parquet') WHERE list_contains(['north', 'south', 'east', 'west'], "region") GROUP BY "region"
-- k0 key
-- n rows
