-- Every input request a task waits on at once (a modern task may list several): `questions` holds
-- them all, as a JSON array of typed questions, when there are more than one (`question` is still
-- the first, so every reader of one question reads it as before); `answered_keys` the keys one
-- answer of several answered together, as a JSON array (`answer_key`/`answer` are the first).
ALTER TABLE tasks ADD COLUMN questions TEXT;
ALTER TABLE tasks ADD COLUMN answered_keys TEXT;
