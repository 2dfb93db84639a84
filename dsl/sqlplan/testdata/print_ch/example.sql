SELECT "region" AS "k0", "sex" AS "k1", count(*) AS "n", count(toFloat64("income")) AS "a1_n", coalesce(sum(toDecimal128(toInt64(((least(greatest((CASE WHEN isNaN(toFloat64("income")) THEN toFloat64(100000) ELSE least(greatest(toFloat64("income"), toFloat64(0)), toFloat64(100000)) END - toFloat64(50000)) * toFloat64(4.294967296e+09), toFloat64(-2.147483648e+14)), toFloat64(2.147483648e+14)) + toFloat64(6.755399441055744e+15)) - toFloat64(6.755399441055744e+15))), 0)), 0) AS "a1_sum" FROM "db"."people" WHERE ((toFloat64("age") BETWEEN toFloat64(30) AND toFloat64(64)) OR CASE WHEN "region" IS NULL THEN NULL ELSE ("region" IN ('north', 'east')) END) AND CASE WHEN "region" IS NULL THEN NULL ELSE ("region" IN ('north', 'south', 'east', 'west')) END AND CASE WHEN "sex" IS NULL THEN NULL ELSE ("sex" IN ('f', 'm')) END GROUP BY "region", "sex"
-- k0 key
-- k1 key
-- n rows
-- a1_n count
-- a1_sum sum
