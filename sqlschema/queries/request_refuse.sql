-- Records why request $1 did not run its job: message $2.
UPDATE pgjobs.pgj_request_ SET reqerror = $2 WHERE reqid = $1
