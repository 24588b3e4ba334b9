"""Small Qt building blocks: number fields, number formatting, menu actions."""
