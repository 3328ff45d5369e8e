ALTER TABLE deployments DROP COLUMN IF EXISTS authorizers;
DROP INDEX IF EXISTS methods_authorizer_idx;
ALTER TABLE methods DROP CONSTRAINT IF EXISTS methods_authorizer_check;
ALTER TABLE methods DROP CONSTRAINT IF EXISTS methods_authorizer_fkey;
ALTER TABLE methods DROP COLUMN IF EXISTS authorization_scopes;
ALTER TABLE methods DROP COLUMN IF EXISTS authorizer_id;
-- Methods an authorizer or AWS_IAM closed are deleted, not opened: the
-- older schema cannot say they are closed.
DELETE FROM methods WHERE authorization_type <> 'NONE';
ALTER TABLE methods DROP CONSTRAINT IF EXISTS methods_authorization_type_check;
ALTER TABLE methods ADD CONSTRAINT methods_authorization_type_check CHECK (authorization_type = 'NONE');
DROP TABLE IF EXISTS authorizers;
