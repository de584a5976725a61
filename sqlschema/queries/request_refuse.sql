-- Records why requests $1 did not run their jobs: messages $2, one each.
UPDATE pgjobs.pgj_request_ q SET reqerror = r.why
FROM unnest($1::bigint[], $2::text[]) AS r(id, why)
WHERE q.reqid = r.id
