DROP TABLE IF EXISTS portal_sessions;
DROP TABLE IF EXISTS portal_invites;
DROP TABLE IF EXISTS portal_accounts;
