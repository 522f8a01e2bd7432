/* placeholder: replaced by the real supervisor */
int main(void) { return 111; }
